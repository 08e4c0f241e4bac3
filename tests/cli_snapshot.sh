#!/usr/bin/env bash
# What the programs say, captured to compare two builds byte for byte (a refactoring keeps every
# byte): --help, --list, dry runs of mixes under each mode (text and JSON), train's dry run of
# every model, and the event streams and run files of fake-train runs (times and run ids
# masked). Usage: tests/cli_snapshot.sh BUILD_DIR OUT_DIR; then diff -r OUT_A OUT_B.
# The build folder's path is written as BUILD, the run folder's as RUNS.
set -u
build=$(cd "${1:?build folder}" && pwd)
out=${2:?output folder}
mkdir -p "$out"
out=$(cd "$out" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export SUITE_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 COLUMNS=100
mask() { sed -e "s|$build|BUILD|g" -e "s|$tmp|RUNS|g" -e 's/[0-9]\{8\}T[0-9]\{6\}Z/TIME/g' \
             -e 's/"[0-9]\{4\}-[0-9][0-9]-[0-9][0-9]T[0-9:]*Z"/"DATE"/g' \
             -e 's/slurm-[0-9]*-[0-9]*-[0-9]*/slurm-ID/g'; }
# measured numbers and process ids of the fake runs
mask_run() { sed -E 's/-?[0-9]+\.[0-9]+(e[-+]?[0-9]+)?/N/g; s/"(pid|child_pid)":[[:space:]]*[0-9]+/"\1": P/g; s/pid [0-9]+/pid P/g'; }
# one command's stdout, stderr and exit code, masked, into out/NAME
snap() {
    local name=$1; shift
    (cd "$tmp" && "$@" >"$out/$name.out" 2>"$out/$name.err"; echo "exit $?" >"$out/$name.rc")
    for f in "$out/$name.out" "$out/$name.err"; do mask <"$f" >"$f.m" && mv "$f.m" "$f"; done
}
rs=$build/run_suite
snap run_suite-help "$rs" --help
snap run_suite-study-help "$rs" --study --help
snap run_suite-report-help "$rs" report --help
snap train-help "$build/train" --help
snap list "$rs" --list
snap list-json "$rs" --list --json
snap no-args "$rs"
i=0
for mix in S S+M+M '7*S' '3*M' L+XL 'M[epochs=3,steps=100]+S[precision=bf16]' 'efficientnetv2_s:imagenet64@128+cait_xxs24:imagenet@128'; do
    for mode in serial naive mps mig mig-emulate streams green all; do
        i=$((i + 1))
        snap "dry-$i-$mode" "$rs" --mode "$mode" --mix "$mix" --dry-run --mig-gpu H100-80GB
        snap "dry-$i-$mode-json" "$rs" --mode "$mode" --mix "$mix" --dry-run --json --mig-gpu H100-80GB
    done
done
snap dry-quick "$rs" --mode mps --mix S+S+M --quick --dry-run
snap dry-mps-shares "$rs" --mode mps --mix S+S+M --mps-sm 25,25,50 --mps-mem 4G --dry-run --json
snap dry-green-share "$rs" --mode green --mix S+M --green-share 30,70 --dry-run --mig-gpu H100-80GB
snap dry-via-green "$rs" --mode mig-emulate --via green --mix S+M --dry-run --mig-gpu H100-80GB --json
snap dry-layouts "$rs" --mode mig-emulate --mix S+M --mig-layouts all --mig-gpu H100-80GB --dry-run
snap dry-gpus "$rs" --gpus 0,1 --mode mps --mix '4*M+8*S' --dry-run --json
snap dry-study "$rs" --study small --quick --dry-run --mig-gpu H100-80GB
snap dry-study-all "$rs" --study all --dry-run --mig-gpu H100-80GB
snap dry-slurm "$rs" --slurm --mode mps --mixes 'S+M;7*S' --quick --dry-run --results "$tmp/slurm"
snap bad-mode "$rs" --mode nope --mix S
snap bad-mix "$rs" --mode mps --mix 'S+Q'
# the program forms: their help, dry runs and refusals, and the run's own refusals
snap gpus-help "$rs" --gpus 0,1 --help
snap slurm-help "$rs" --slurm --help
snap dry-gpus-text "$rs" --gpus 0,1 --mode mps --mix '4*M+8*S' --dry-run
snap dry-gpus-quick "$rs" --gpus 0,1 --mode naive --mix '2*M+2*S' --quick --dry-run --json
snap dry-gpus-bf16 "$rs" --gpus 0,1 --mode mps --mix '4*M' --precision bf16 --dry-run --json
snap dry-gpus-ddp "$rs" --gpus 0,1 --mode all --mix 'M[gpus=2]+2*S' --dry-run
i=0
for args in "--mode naive --mix S --repeat 2" "--gpu 1 --mode naive --mix S" "--mix S" "--mode naive" \
    "--mode warp --mix S" "--mode naive --mix S --ddp-under x" "--mode naive --mix M[gpus=2]+S --ddp-under mps" \
    "--mode naive --mix S+S --mps-sm 50" "--mode naive --mix S+S --bogus" "--mode naive --mix S+Q"; do
    i=$((i + 1))
    # shellcheck disable=SC2086
    snap "bad-gpus-$i" "$rs" --gpus 0,1 $args --dry-run
done
snap bad-gpus-list "$rs" --gpus 0,x --mode naive --mix S
i=0
for args in "huge" "small --degrees 0" "small --mix S" "small --steps-per-epoch x" "small --gpu 1 --gpus 0,1" \
    "small --gpus 0,0" "small --sample-ms 5"; do
    i=$((i + 1))
    # shellcheck disable=SC2086
    snap "bad-study-$i" "$rs" --study $args --dry-run
done
snap dry-study-quick "$rs" --study small --quick --dry-run --degrees 2
i=0
for args in "--mode naive" "--mode warp --mix S" "--mode naive --mix S --bogus" "--gres gpu --mode naive --mix S" \
    "--mode naive --mixes S;Q" "--mode naive --study nothing" "--mode naive --mix S --mps-sm 50"; do
    i=$((i + 1))
    # shellcheck disable=SC2086
    snap "bad-slurm-$i" "$rs" --slurm $args --dry-run --results "$tmp/slurm-bad"
done
snap dry-slurm-study "$rs" --slurm --mode naive --study small --quick --dry-run --results "$tmp/slurm-study"
i=0
for args in "--mode mps --mix S --json" "--list --repeat 2" "--mode naive --mix S --completion --window 3" \
    "--mode naive --skip x --mix S" "--mode all --skip nope --mix S" "--mode naive --mix S --baseline /nonexistent" \
    "--mode naive --mix S --train /nonexistent/train" "--mode mig-emulate --mix S+M --repeat 2 --mig-layouts all" \
    "--mode naive --mix resnet50:imagenet@64[decode=gpu]" "--mode naive --mix S --epochs 0"; do
    i=$((i + 1))
    # shellcheck disable=SC2086
    snap "bad-run-$i" "$rs" $args --dry-run --mig-gpu H100-80GB
done
snap dry-decode "$rs" --mode naive --mix 'resnet50:imagenet@64[decode=cpu]+resnet50:imagenet@64[decode=auto,decode_slots=2]' --dry-run --json
for model in resnet26 resnet50 resnet152 efficientnetv2_s cait_xxs24; do
    for p in tf32 bf16; do
        snap "train-dry-$model-$p" "$build/train" --model "$model" --data imagenet64 --precision "$p" --dry-run --json
    done
    snap "train-dry-$model-text" "$build/train" --model "$model" --data cifar10 --dry-run
done
snap train-dry-dlrm "$build/train" --model dlrm --data criteo-kaggle --dry-run --json
snap train-dry-dlrm-tb "$build/train" --model dlrm --data criteo-terabyte --max-rows 1000 --dry-run --json
snap train-bad "$build/train" --model nope --dry-run
# Runs with the fake train: what the runner writes (times masked; timeline and logs left out)
for mode in serial naive; do
    snap "fake-$mode" "$rs" --mode "$mode" --mix S+M --quick --no-monitor --train "$build/fake_train" --results "$tmp/r-$mode"
    d=$(ls -d "$tmp/r-$mode"/*/ | head -1)
    for f in jobs.csv summary.json run.json; do
        [ -f "$d/$f" ] && mask <"$d/$f" | mask_run >"$out/fake-$mode-$f"
    done
    # concurrent jobs print in any order: their lines are compared sorted
    for f in "$out/fake-$mode".*; do mask_run <"$f" | sort >"$f.m" && mv "$f.m" "$f"; done
done
echo "snapshot of $build in $out ($(ls "$out" | wc -l) files)"
