// Writes a Zarr v3 group with zarrita (run by test_zarr_stores.py with node,
// from the folder zarrita was installed into): node write_v3.mjs STORE
import * as zarr from "zarrita";
import FileSystemStore from "@zarrita/storage/fs";

const store = new FileSystemStore(process.argv[2]);
const root = await zarr.create(zarr.root(store), { attributes: { title: "written by zarrita", answer: 42 } });

const time = await zarr.create(root.resolve("time"), {
  shape: [6], chunkShape: [4], dtype: "float64", dimensionNames: ["time"],
  attributes: { units: "days since 2000-01-01", calendar: "standard", standard_name: "time" } });
await zarr.set(time, null, { data: new Float64Array([0, 1, 2, 3, 4, 5]), shape: [6], stride: [1] });

// transpose (order F), big-endian bytes, zstd; chunks of time 4..5 never written (fill)
const t = await zarr.create(root.resolve("t"), {
  shape: [6, 5], chunkShape: [4, 2], dtype: "float32", fillValue: -999, dimensionNames: ["time", "x"],
  attributes: { units: "K" },
  codecs: [{ name: "transpose", configuration: { order: [1, 0] } }, { name: "bytes", configuration: { endian: "big" } },
           { name: "zstd", configuration: { level: 3, checksum: false } }] });
const tv = new Float32Array(20);
for (let i = 0; i < 20; ++i) tv[i] = i / 4;
await zarr.set(t, [zarr.slice(0, 4), null], { data: tv, shape: [4, 5], stride: [5, 1] });

// int64, chunk keys "c.0" (separator "."), zarrita's empty codec list
const n = await zarr.create(root.resolve("n"), {
  shape: [6], chunkShape: [3], dtype: "int64", fillValue: 0, dimensionNames: ["time"], chunkSeparator: "." });
await zarr.set(n, null, { data: new BigInt64Array([1n, -2n, 3n, 2n ** 40n, 5n, -6n]), shape: [6], stride: [1] });

// blosc (lz4, byte shuffle)
const b = await zarr.create(root.resolve("b"), {
  shape: [5], chunkShape: [5], dtype: "int16", fillValue: 7, dimensionNames: ["x"],
  codecs: [{ name: "bytes", configuration: { endian: "little" } },
           { name: "blosc", configuration: { cname: "lz4", clevel: 5, shuffle: "shuffle", typesize: 2, blocksize: 0 } }] });
await zarr.set(b, null, { data: new Int16Array([10, -20, 30, -40, 50]), shape: [5], stride: [1] });

await zarr.create(root.resolve("sub"), { attributes: { note: "a sub-group" } });
