#!/usr/bin/env bash
# Tidies the section-3 man pages Doxygen made (make docs), so that they can
# sit in a MANPATH beside the C library's: only pages named mmb... or
# MMB_... stay (Doxygen also makes one per struct member, free.3, index.3 or
# init.3, which would shadow the C library's pages); a header's page is
# named mmb_<header>.3 (mmb_allocation.h.3), and every synopsis says the
# #include a user writes, <mmb/...>.
#   docs/man-tidy.sh build/docs/man/man3
set -euo pipefail
cd "${1:?usage: docs/man-tidy.sh MAN3_DIR}"
for f in *.h.3; do
  mv "$f" "mmb_$f"
done
for f in *.3; do
  case "$f" in mmb* | MMB*) ;; *) rm -f "$f" ;; esac
done
for f in mmb_*.h.3; do   # the header's own include first in its synopsis
  h=${f#mmb_}; h=${h%.3}; h=${h%.h}
  awk -v inc="\\\\fC#include <mmb/$h\\\\&.h>\\\\fP" '
    { print }
    /^\.SH SYNOPSIS$/ { syn = 1; next }
    syn && /^\.PP$/ { print inc; print ".br"; syn = 0 }' "$f" > "$f.tmp"
  mv "$f.tmp" "$f"
done
sed -i -E \
  -e 's|^\.so man3/([a-z_]+\.h\.3)$|.so man3/mmb_\1|' \
  -e 's|^\.TH "include/mmb/([a-z_]+\.h)"|.TH "mmb_\1"|' \
  -e 's|^include/mmb/([a-z_]+\.h)$|mmb_\1 \\- <mmb/\1>|' \
  -e 's|#include <([a-z_]+)\\&\.h>|#include <mmb/\1\\\&.h>|' \
  *.3
# every page left is mmb's, and says where it is declared
bad=$(ls | grep -v -E '^(mmb|MMB)' || true)
[ -z "$bad" ] || { echo "man-tidy: pages that are not mmb's: $bad" >&2; exit 1; }
for f in *.3; do
  target=$f
  if head -1 "$f" | grep -q '^\.so '; then target=$(head -1 "$f" | sed 's|^\.so man3/||'); fi
  [ -f "$target" ] || { echo "man-tidy: $f points to $target, which is not there" >&2; exit 1; }
done
