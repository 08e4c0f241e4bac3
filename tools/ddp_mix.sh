#!/usr/bin/env bash
# Data-parallel jobs beside small jobs over every card of this machine: for each mix, REPEATS launches
# of `run_suite --gpus ALL --mode all --ddp-under mps` (serial, naive and mps, one pass each, the
# serial pass each launch's reference; the modes that cannot hold a data-parallel job are named and
# left out), one common window per pass; then tools/ddp_mix_table.py's table: STP and ANTT per card
# and for the whole run, median [min-max] over the launches, and the lowest overlap of any job.
#   tools/ddp_mix.sh BUILD_DIR OUT_DIR [REPEATS]   (DDP_MIXES="M[gpus=4]+8*S;2*M[gpus=2]+8*S",
#   DDP_MIX_WINDOW seconds, 3)
set -u
build=${1:?build folder}
out=${2:?output folder}
repeats=${3:-3}
here=$(cd "$(dirname "$0")" && pwd)
export NCCL_NVLS_ENABLE=0
# the launches share their convolution choices (as the guard's runs do): searched once, not per launch
export SUITE_CONV_CHOICES=${SUITE_CONV_CHOICES:-$out/conv-choices.tsv}
mkdir -p "$out"
gpus=$(nvidia-smi -L | wc -l)
list=$(seq -s, 0 $((gpus - 1)))
status=0
IFS=';' read -r -a mixes <<<"${DDP_MIXES:-M[gpus=4]+8*S;2*M[gpus=2]+8*S}"
for mix in "${mixes[@]}"; do
    tag=$(echo "$mix" | tr -c 'A-Za-z0-9\n' '_')
    for r in $(seq 1 "$repeats"); do
        dir=$out/$tag/launch-$r
        rm -rf "$dir"
        timeout -s KILL 240 "$build/run_suite" --gpus "$list" --mode all --ddp-under mps --mix "$mix" \
            --window "${DDP_MIX_WINDOW:-3}" --windows 1 --results "$dir" >"$out/$tag-$r.log" 2>&1
        rc=$?
        echo "$mix, launch $r: exit $rc"
        [ $rc -eq 0 ] || { tail -20 "$out/$tag-$r.log"; status=1; }
    done
    python3 "$here/ddp_mix_table.py" "$out/$tag"/launch-*/*/ || status=1
done
echo quit | nvidia-cuda-mps-control >/dev/null 2>&1
exit $status
