// The outside reference for stag's tokenizer.json reader with a Split regex (Llama 3's) and
// ignore_merges: the npm package llama3-tokenizer-js, which ships Llama 3's real vocabulary and
// merges with its own JavaScript encoder. Writes a tokenizer.json (Hugging Face's layout) made
// from the package's vocabulary and merges, every line of the text files as node decodes it to
// OUT_TEXT, and the package's ids for each line (no BOS/EOS) to OUT_IDS.
//   node llama3_reference.js PACKAGE_DIR OUT_TOKENIZER_JSON OUT_TEXT OUT_IDS FILE...
'use strict';
const fs = require('fs');
const path = require('path');

const [pkg, outJson, outText, outIds, ...files] = process.argv.slice(2);
if (!pkg || !outIds || files.length === 0) {
  console.error('usage: node llama3_reference.js PACKAGE_DIR OUT_JSON OUT_TEXT OUT_IDS FILE...');
  process.exit(2);
}
const { llama3Tokenizer: tok } = require(
  path.resolve(pkg, 'bundle/commonjs-llama3-tokenizer-with-baked-data.cjs'));

// The package's regex, as Llama 3's tokenizer.json spells it.
const pattern = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const vocab = {}, added = [];
tok.vocabById.forEach((t, id) => {
  if (/^<\|.*\|>$/.test(t) && id >= 128000) added.push({ id, content: t, single_word: false,
    lstrip: false, rstrip: false, normalized: false, special: true });
  else vocab[t] = id;
});
const merges = [...tok.merges.entries()].sort((a, b) => a[1] - b[1]).map(e => e[0]);
fs.writeFileSync(outJson, JSON.stringify({
  version: '1.0', truncation: null, padding: null, added_tokens: added, normalizer: null,
  pre_tokenizer: { type: 'Sequence', pretokenizers: [
    { type: 'Split', pattern: { Regex: pattern }, behavior: 'Isolated', invert: false },
    { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false }] },
  post_processor: null, decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true,
    use_regex: true },
  model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null,
    end_of_word_suffix: null, fuse_unk: false, byte_fallback: false, ignore_merges: true,
    vocab, merges } }));

const text = [], ids = [];
for (const f of files) {
  for (let line of fs.readFileSync(f, 'utf-8').split('\n')) {
    if (line.endsWith('\r')) line = line.slice(0, -1);
    text.push(line);
    ids.push(tok.encode(line, { bos: false, eos: false }).join(' '));
  }
}
fs.writeFileSync(outText, text.join('\n') + '\n');
fs.writeFileSync(outIds, ids.join('\n') + '\n');
console.log(`llama3_reference: ${text.length} lines from ${files.length} files, ` +
            `${Object.keys(vocab).length} tokens, ${merges.length} merges, ${added.length} added`);
