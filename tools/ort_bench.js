// Times ONNX Runtime (npm onnxruntime-node) on one model for ./bench.sh: the median wall time of
// `steps` runs after `warmup` untimed ones, printed as `<prefix>.infer_ms: <ms> ms` like
// stag-bench's figures. Inputs: DIR/inputs.json ([{"name", "dtype", "dims", "file"}]) and the
// raw files it names (stag-bench --export-onnx and tools/torch_bench.py --export-onnx write them).
//   NODE_PATH=data/npm/onnxruntime/node_modules node tools/ort_bench.js MODEL DIR PREFIX THREADS STEPS
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

const kArrays = {
  float32: Float32Array, float64: Float64Array, int32: Int32Array,
  int64: BigInt64Array, bool: Uint8Array,
};

async function main() {
  const [model, dir, prefix, threads, steps] = process.argv.slice(2);
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: Number(threads), interOpNumThreads: 1,
    graphOptimizationLevel: 'all', executionMode: 'sequential',
  });
  const feeds = {};
  for (const t of JSON.parse(fs.readFileSync(path.join(dir, 'inputs.json'), 'utf8'))) {
    const bytes = fs.readFileSync(path.join(dir, t.file));
    const data = new kArrays[t.dtype](
        bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
    feeds[t.name] = new ort.Tensor(t.dtype, data, t.dims);
  }
  const warmup = 3;
  const times = [];
  for (let i = 0; i < warmup + Number(steps); ++i) {
    const t0 = process.hrtime.bigint();
    await session.run(feeds);
    if (i >= warmup) times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  times.sort((a, b) => a - b);
  const n = times.length;
  const median = n % 2 ? times[(n - 1) / 2] : (times[n / 2 - 1] + times[n / 2]) / 2;
  console.log(`${prefix}.infer_ms: ${median.toFixed(3)} ms`);
}

main().catch((e) => {
  console.error(`ort_bench: ${e.message || e}`);
  process.exit(1);
});
