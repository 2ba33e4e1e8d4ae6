// Reads arrays of a Zarr store (v3, or v2 where zarrita finds no v3 metadata) with zarrita and prints
// them as JSON ({name: [values in C order]}): node read_v3.mjs STORE NAME...  (STORE: a folder, or an
// http:// URL read with zarrita's FetchStore)
import * as zarr from "zarrita";
import FetchStore from "@zarrita/storage/fetch";
import FileSystemStore from "@zarrita/storage/fs";

const where = process.argv[2];
const store = /^https?:\/\//.test(where) ? new FetchStore(where) : new FileSystemStore(where);
const out = {};
for (const name of process.argv.slice(3)) {
  const array = await zarr.open(zarr.root(store).resolve(name), { kind: "array" });
  const { data, shape, stride } = await zarr.get(array);
  const values = [];
  const index = shape.map(() => 0);
  const total = shape.reduce((a, b) => a * b, 1);
  for (let i = 0; i < total; ++i) {  // C order, whatever strides zarrita chose (order F gives others)
    const v = data[index.reduce((at, k, d) => at + k * stride[d], 0)];
    values.push(typeof v === "bigint" ? v.toString() : v);
    for (let d = shape.length - 1; d >= 0 && ++index[d] === shape[d]; --d) index[d] = 0;
  }
  out[name] = values;
}
console.log(JSON.stringify(out));
