// The outside reference for stag's SentencePiece-style BPE (Llama 2's tokenizer.json): the npm
// package llama-tokenizer-js, which ships Llama 1/2's real vocabulary (32000 tokens) and merges
// with its own JavaScript encoder. Writes a tokenizer.json in Llama 2's Hugging Face layout
// (normaliser Prepend "▁" + Replace " " -> "▁", no pre-tokeniser, BPE with byte_fallback,
// <unk> <s> </s> as added tokens, the <s> template) made from the package's vocabulary and
// merges, every line of the text files as node decodes it to OUT_TEXT, and the package's ids
// for each line (no <s>, the leading "▁" that Llama 2 puts before a text) to OUT_IDS.
//   node llama2_reference.js PACKAGE_DIR OUT_TOKENIZER_JSON OUT_TEXT OUT_IDS FILE...
'use strict';
const fs = require('fs');
const path = require('path');

const [pkg, outJson, outText, outIds, ...files] = process.argv.slice(2);
if (!pkg || !outIds || files.length === 0) {
  console.error('usage: node llama2_reference.js PACKAGE_DIR OUT_JSON OUT_TEXT OUT_IDS FILE...');
  process.exit(2);
}

async function main() {
  const tok = (await import(path.resolve(pkg, 'llama-tokenizer.js'))).default;
  const vocab = {};
  tok.vocabById.forEach((t, id) => { vocab[t] = id; });
  const merges = [...tok.merges.entries()].sort((a, b) => a[1] - b[1]).map(e => e[0]);
  const special = (id, content) => ({ id, content, single_word: false, lstrip: false,
    rstrip: false, normalized: false, special: true });
  const meta = '\u2581';
  fs.writeFileSync(outJson, JSON.stringify({
    version: '1.0', truncation: null, padding: null,
    added_tokens: [special(0, '<unk>'), special(1, '<s>'), special(2, '</s>')],
    normalizer: { type: 'Sequence', normalizers: [{ type: 'Prepend', prepend: meta },
      { type: 'Replace', pattern: { String: ' ' }, content: meta }] },
    pre_tokenizer: null,
    post_processor: { type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
      pair: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: { id: '<s>', type_id: 1 } }, { Sequence: { id: 'B', type_id: 1 } }],
      special_tokens: { '<s>': { id: '<s>', ids: [1], tokens: ['<s>'] } } },
    decoder: { type: 'Sequence', decoders: [
      { type: 'Replace', pattern: { String: meta }, content: ' ' }, { type: 'ByteFallback' },
      { type: 'Fuse' }, { type: 'Strip', content: ' ', start: 1, stop: 0 }] },
    model: { type: 'BPE', dropout: null, unk_token: '<unk>', continuing_subword_prefix: null,
      end_of_word_suffix: null, fuse_unk: true, byte_fallback: true, vocab, merges } }));

  const text = [], ids = [];
  for (const f of files) {
    for (let line of fs.readFileSync(f, 'utf-8').split('\n')) {
      if (line.endsWith('\r')) line = line.slice(0, -1);
      // Hugging Face's tokenizers split the added tokens <unk>, <s> and </s> off first and
      // normalise each piece between them on its own (so each gets its "▁"); this encoder does
      // not know them, so the pieces are given to it one by one (one fortune spells "<s>").
      text.push(line);
      const out = [];
      for (const piece of line.split(/(<unk>|<s>|<\/s>)/)) {
        if (piece === '<unk>' || piece === '<s>' || piece === '</s>')
          out.push({ '<unk>': 0, '<s>': 1, '</s>': 2 }[piece]);
        else
          out.push(...tok.encode(piece, false, true));
      }
      ids.push(out.join(' '));
    }
  }
  fs.writeFileSync(outText, text.join('\n') + '\n');
  fs.writeFileSync(outIds, ids.join('\n') + '\n');
  console.log(`llama2_reference: ${text.length} lines from ${files.length} files, ` +
              `${Object.keys(vocab).length} tokens, ${merges.length} merges`);
}
main().catch(e => { console.error(e); process.exit(1); });
