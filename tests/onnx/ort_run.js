// Runs an ONNX model in ONNX Runtime (npm onnxruntime-node) for stag's tests: the outside
// reference of the ONNX export (tests/ort_run.cpp writes the inputs, reads the outputs).
//   NODE_PATH=<dir>/node_modules node ort_run.js model.onnx DIR [threads]
// DIR/inputs.json: [{"name", "dtype", "dims", "file"}] with each tensor's raw little-endian
// bytes in DIR/<file>; the outputs go to DIR/outputs.json and DIR/out<k>.bin the same way.
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

const kArrays = {
  float32: Float32Array, float64: Float64Array, int32: Int32Array,
  int64: BigInt64Array, bool: Uint8Array,
};

async function main() {
  const [model, dir, threads] = process.argv.slice(2);
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: Number(threads || 1), interOpNumThreads: 1,
  });
  const feeds = {};
  for (const t of JSON.parse(fs.readFileSync(path.join(dir, 'inputs.json'), 'utf8'))) {
    const bytes = fs.readFileSync(path.join(dir, t.file));
    const Arr = kArrays[t.dtype];
    const data = new Arr(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
    feeds[t.name] = new ort.Tensor(t.dtype, data, t.dims);
  }
  const results = await session.run(feeds);
  const out = [];
  session.outputNames.forEach((name, k) => {
    const r = results[name];
    const file = `out${k}.bin`;
    fs.writeFileSync(path.join(dir, file),
                     Buffer.from(r.data.buffer, r.data.byteOffset, r.data.byteLength));
    out.push({name, dtype: r.type, dims: r.dims, file});
  });
  fs.writeFileSync(path.join(dir, 'outputs.json'), JSON.stringify(out));
}

main().catch((e) => {
  console.error(`ort_run: ${e.message || e}`);
  process.exit(1);
});
