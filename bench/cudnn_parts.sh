#!/usr/bin/env bash
# The device side of bench/pack_cudnn.sh's parts (lab/device_run.sh's cudnn-part and
# conv-bn-probe-927 stages):
#   cudnn_parts.sh keep SRC KEEP          each part in SRC (as a call carried it) whose sha256 is
#                                         MANIFEST's is copied to KEEP; prints which are still missing
#   cudnn_parts.sh assemble SRC KEEP DEST the parts of KEEP (and SRC) joined, checked against the
#                                         whole archive's sha256, unpacked into DEST/lib; prints DEST/lib
#   cudnn_parts.sh nvrtc                  the folder of libnvrtc.so.13 (pip's layout or the toolkit's)
# A part that is missing or does not match is named, and the command exits 1.
set -u
cmd=${1:-}
manifest_of() {
    local src=$1 keep=$2
    if [ -f "$src/MANIFEST" ]; then echo "$src/MANIFEST"; elif [ -f "$keep/MANIFEST" ]; then echo "$keep/MANIFEST"; else
        echo "cudnn_parts: no MANIFEST in $src or $keep (carry .cudnn927/MANIFEST with each part)" >&2; return 1; fi
}
case $cmd in
keep)
    src=${2:?keep SRC KEEP} keep=${3:?keep SRC KEEP}
    manifest=$(manifest_of "$src" "$keep") || exit 1
    mkdir -p "$keep"
    [ "$manifest" = "$keep/MANIFEST" ] || cp "$manifest" "$keep/MANIFEST"
    missing=() rc=0
    while read -r kind name sum; do
        [ "$kind" = part ] || continue
        if [ -f "$keep/$name" ] && [ "$(sha256sum <"$keep/$name" | cut -d' ' -f1)" = "$sum" ]; then continue; fi
        if [ -f "$src/$name" ]; then
            if [ "$(sha256sum <"$src/$name" | cut -d' ' -f1)" = "$sum" ]; then
                cp "$src/$name" "$keep/$name" && echo "$name: arrived intact, kept in $keep"
                continue
            fi
            echo "$name: arrived but its sha256 is not MANIFEST's" >&2; rc=1
        fi
        missing+=("$name")
    done <"$manifest"
    if [ ${#missing[@]} = 0 ]; then echo "every part is in $keep"; else echo "still missing: ${missing[*]}"; fi
    exit $rc
    ;;
assemble)
    src=${2:?assemble SRC KEEP DEST} keep=${3:?assemble SRC KEEP DEST} dest=${4:?assemble SRC KEEP DEST}
    bash "$0" keep "$src" "$keep" >&2 || exit 1
    manifest="$keep/MANIFEST"
    read -r _ sum size < <(grep '^archive ' "$manifest")
    codec=$(awk '/^codec /{print $2}' "$manifest")
    read -r -a parts < <(awk '/^part /{printf "%s ", $2}' "$manifest")
    for p in "${parts[@]}"; do [ -f "$keep/$p" ] || { echo "cudnn_parts: $p has not arrived" >&2; exit 1; }; done
    have=$(cd "$keep" && cat "${parts[@]}" | sha256sum | cut -d' ' -f1)
    [ "$have" = "$sum" ] || { echo "cudnn_parts: the joined parts' sha256 is $have, MANIFEST says $sum" >&2; exit 1; }
    rm -rf "$dest" && mkdir -p "$dest/lib"
    case $codec in
    xz) (cd "$keep" && cat "${parts[@]}") | xz -d | tar -C "$dest/lib" -xf - ;;
    zstd) (cd "$keep" && cat "${parts[@]}") | zstd -d --long=27 -q | tar -C "$dest/lib" -xf - ;;
    *) echo "cudnn_parts: MANIFEST's codec '$codec' is neither xz nor zstd" >&2; exit 1 ;;
    esac || { echo "cudnn_parts: unpacking the $size-byte archive failed" >&2; exit 1; }
    while read -r kind name bytes; do
        [ "$kind" = library ] || continue
        [ "$(stat -c %s "$dest/lib/$name" 2>/dev/null)" = "$bytes" ] ||
            { echo "cudnn_parts: $dest/lib/$name is not the $bytes bytes MANIFEST lists" >&2; exit 1; }
    done <"$manifest"
    echo "cuDNN $(awk '/^version /{print $2}' "$manifest") unpacked into $dest/lib" >&2
    echo "$dest/lib"
    ;;
nvrtc)
    for d in $(python3 -c 'import nvidia; print(" ".join(p + "/cu13/lib " + p + "/cuda_nvrtc/lib" for p in nvidia.__path__))' 2>/dev/null) \
        /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
        [ -e "$d/libnvrtc.so.13" ] && { echo "$d"; exit 0; }
    done
    exit 1
    ;;
*)
    echo "usage: cudnn_parts.sh keep SRC KEEP | assemble SRC KEEP DEST | nvrtc" >&2
    exit 2
    ;;
esac
