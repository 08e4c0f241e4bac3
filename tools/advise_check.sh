#!/usr/bin/env bash
# The advisor checked on the GPU (issue 51): tools/advise_check.sh BUILD_DIR OUT [MIX_NAME...]
# Each mix below runs `run_suite advise --check` (the probes, then every ranked candidate that fits
# under --repeat 3 against one serial run) into OUT/<name>/. Resumable across device calls: a mix
# whose folder (OUT/<name>/, a link to the advice's folder in OUT) already holds a check.json is skipped, so a call cut short loses one mix at most.
# Order: the FIT mixes first with the default constants; then `advise --fit` on their check runs
# writes OUT/advise-constants.json, which the HELD-OUT mixes read (their probes are cached in OUT's
# advise-cache.json per job, GPU and revision); then tools/advise_score.py OUT scores the held-out
# mixes only. MIX_NAMEs (or ADVISE_MIXES="name name") pick a subset for one call; the fit runs once
# every fit mix has its check.json and advise-constants.json is not there yet.
# ADVISE_WINDOW (2 s) and ADVISE_WARMUP (20 steps) are the probes' and the check's window: the sharing
# guard's scale (1.5 s windows), since a mix's check launches every candidate three times and the
# device's time is what limits how many mixes a session checks.
# ADVISE_ARGS: more options for every run_suite this runs (a CPU rehearsal: "--train build/fake_train");
# ADVISE_CHECK_ARGS: more for the checks only; "--check-top 6" unless set (the six best-ranked and
# each mode's best: every candidate at three repeats would take a session's device time for four
# mixes); "" checks every candidate.
# Energy per sample is checked in the same runs, whatever the objective: the probes' power and each
# check run's window energy (NVML's energy counter) come from the GPU monitor, so it stays on
# (--no-monitor in ADVISE_ARGS is refused).
# The probing target sets the probes' wall time against `run_suite --mode all --mig-emulate --repeat
# 3` on the same mix: measured for the held-out mixes of ADVISE_MODE_ALL_MIXES (two by default, to
# keep device time) into OUT/<name>/mode_all_wall_s, once (resumable too).
# ADVISE_GPUS="0 1 2 3": one mix at a time on each of these GPUs (run_suite --gpu), the fit mixes
# first, then the held-out ones, each mix's lines printed when it ends; they share OUT's probe cache
# (its saves merge under a lock). A mix's numbers are its GPU's; on one host of one GPU model the
# mixes' figures compare as the guard's do across its runs. Unset: one mix after another on GPU 0.
# ADVISE_MIX_TABLE: a file of name|mix|precision|role lines in place of the fourteen below (tests).
set -u
build=${1:?usage: tools/advise_check.sh BUILD_DIR OUT [MIX_NAME...]}
out=${2:?usage: tools/advise_check.sh BUILD_DIR OUT [MIX_NAME...]}
shift 2
window=${ADVISE_WINDOW:-2}
warmup=${ADVISE_WARMUP:-20}
E=efficientnetv2_s:imagenet64@128
C=cait_xxs24:imagenet@128
# name|mix|precision|role: the study's uniform mixes at 2, 3 and 7 jobs and heterogeneous ones of
# S, M, L, EfficientNetV2-S, CaiT and XL, in tf32 and bf16. Fit: the uniform and mixed ResNet mixes
# in tf32 at 2 and 3 jobs, which show the constants time slices, packing, partitions and green;
# held out: the rest, so that every other model, bf16 and seven jobs are predicted from constants
# that never saw them (the held-out ones in the order they are worth a session's device time).
MIXES="
2S-tf32|2*S|tf32|fit
3M-tf32|3*M|tf32|fit
SMM-tf32|S+M+M|tf32|fit
SMM-bf16|S+M+M|bf16|held-out
S-E-bf16|S+$E|bf16|held-out
7S-tf32|7*S|tf32|held-out
S-L-tf32|S+L|tf32|held-out
M-C-tf32|M+$C|tf32|held-out
2M-bf16|2*M|bf16|held-out
3S-bf16|3*S|bf16|held-out
S-XL-tf32|S+XL|tf32|held-out
E-C-tf32|$E+$C|tf32|held-out
S-E-C-bf16|S+$E+$C|bf16|held-out
7S-bf16|7*S|bf16|held-out
"
if [ -n "${ADVISE_MIX_TABLE:-}" ]; then
    MIXES=$(cat "$ADVISE_MIX_TABLE") || { echo "advise_check.sh: ADVISE_MIX_TABLE: cannot read $ADVISE_MIX_TABLE" >&2; exit 2; }
fi
while IFS='|' read -r name mix prec role extra; do # each line, whoever wrote the table
    [ -n "$name$mix$prec$role$extra" ] || continue
    if ! [[ $name =~ ^[A-Za-z0-9._-]+$ ]] || [ -z "$mix" ] || [ -z "$prec" ] || [ -n "$extra" ] ||
        { [ "$role" != fit ] && [ "$role" != held-out ]; }; then
        echo "advise_check.sh: ${ADVISE_MIX_TABLE:-the mix table}: \"$name|$mix|$prec|$role${extra:+|$extra}\": expected" \
             "NAME|MIX|PRECISION|fit or held-out (NAME: letters, digits, . _ -)" >&2
        exit 2
    fi
done <<<"$MIXES"
read -r -a gpus <<<"${ADVISE_GPUS:-}"
seen_gpus=" "
for g in "${gpus[@]}"; do
    [[ $g =~ ^[0-9]+$ ]] || { echo "advise_check.sh: ADVISE_GPUS: \"$g\" is not a GPU index (expected e.g. \"0 1 2 3\")" >&2; exit 2; }
    [[ $seen_gpus != *" $g "* ]] || { echo "advise_check.sh: ADVISE_GPUS: GPU $g is named twice (one mix a GPU at once)" >&2; exit 2; }
    seen_gpus="$seen_gpus$g "
done
wanted=" ${*:-${ADVISE_MIXES:-}} "
case " ${ADVISE_ARGS:-} " in *" --no-monitor "*)
    echo "advise_check.sh: ADVISE_ARGS has --no-monitor: the energy check needs the GPU monitor" >&2; exit 2;;
esac
mkdir -p "$out"
# one search per convolution for every mix's probes and checks (SUITE_CONV_CHOICES: as the guard's)
SUITE_CONV_CHOICES=${SUITE_CONV_CHOICES:-$(cd "$out" && pwd)/conv-choices.tsv}
export SUITE_CONV_CHOICES
status=0
one() { # name mix precision [gpu]
    local d="$out/$1"
    if ls "$d"/*-advise-*/check.json >/dev/null 2>&1; then echo "--- $1: done before, skipped"; return 0; fi
    rm -rf "$d"; mkdir -p "$d"
    echo "--- $1: $2 in $3${4:+ on GPU $4}"
    local t0=$SECONDS
    # the cache and the constants live in OUT, shared by every mix; the advice's folder in OUT/<name>
    "$build/run_suite" advise --mix "$2" --precision "$3" --window "$window" --warmup-steps "$warmup" \
        ${4:+--gpu "$4"} --check ${ADVISE_CHECK_ARGS---check-top 6} --results "$out" ${ADVISE_ARGS:-} >"$d/advise.log" 2>&1
    local rc=$?
    local made # the advice's folder, as the advisor names it (other mixes may be making theirs now)
    made=$(sed -n 's/^\[advise\] .*, results in //p' "$d/advise.log" | head -1)
    # linked, not moved: the check's runs name their serial baseline by its path (keep OUT relative,
    # as device_run.sh's is, so that the folder still reads after the tree moves)
    [ -n "$made" ] && ln -s "../$(basename "$made")" "$d/$(basename "$made")"
    echo "$((SECONDS - t0))" >"$d/wall_s"
    sed -n '/^check:/,$p' "$d/advise.log"
    [ $rc -eq 0 ] || { echo "    exit $rc (its log: $d/advise.log)"; return 1; }
}
# --mode all on the same mix, timed whole (process starts included, as the probes are)
mode_all() { # name mix precision [gpu]
    local d="$out/$1"
    [ -f "$d/mode_all_wall_s" ] && return 0
    mkdir -p "$d"
    local t0=$SECONDS
    "$build/run_suite" --mode all --mig-emulate --mix "$2" --precision "$3" --window "$window" --warmup-steps "$warmup" \
        ${4:+--gpu "$4"} --repeat 3 --results "$d/mode-all" ${ADVISE_ARGS:-} >"$d/mode_all.log" 2>&1 ||
        { echo "    --mode all: exit $? (its log: $d/mode_all.log)"; return 1; }
    echo "$((SECONDS - t0))" >"$d/mode_all_wall_s"
    echo "    --mode all --repeat 3: $(cat "$d/mode_all_wall_s") s"
}
work() { # name mix precision role [gpu]: the mix's check, and --mode all's time where asked
    local rc=0
    one "$1" "$2" "$3" "${5:-}" || rc=1
    if [ "$4" = held-out ] && [[ "$mode_all_mixes" == *" $1 "* ]]; then mode_all "$1" "$2" "$3" "${5:-}" || rc=1; fi
    return $rc
}
# The lanes: one background work a GPU of ADVISE_GPUS, its lines kept until it ends.
lane_pid=()
lane_name=()
lane_end() { # lane index: waits for it, prints its lines
    wait "${lane_pid[$1]}" || status=1
    cat "$out/.lane-${lane_name[$1]}.log"
    rm -f "$out/.lane-${lane_name[$1]}.log"
    lane_pid[$1]=""
}
launch() { # name mix precision role: here (one GPU or none named), else on the first free GPU
    if [ ${#gpus[@]} -le 1 ]; then work "$@" "${gpus[0]:-}" </dev/null || status=1; return; fi
    while :; do
        for i in "${!gpus[@]}"; do
            if [ -n "${lane_pid[$i]:-}" ] && ! kill -0 "${lane_pid[$i]}" 2>/dev/null; then lane_end "$i"; fi
            if [ -z "${lane_pid[$i]:-}" ]; then
                work "$@" "${gpus[$i]}" </dev/null >"$out/.lane-$1.log" 2>&1 &
                lane_pid[$i]=$!
                lane_name[$i]=$1
                return
            fi
        done
        sleep 1
    done
}
drain() { for i in "${!gpus[@]}"; do [ -z "${lane_pid[$i]:-}" ] || lane_end "$i"; done; }
mode_all_mixes=" ${ADVISE_MODE_ALL_MIXES:-SMM-bf16 S-L-tf32} "
fit_done() { [ -f "$out/advise-constants.json" ]; }
for role in fit held-out; do
    if [ "$role" = held-out ] && ! fit_done; then
        dirs=""
        ready=1
        while IFS='|' read -r name mix prec r; do
            [ "$r" = fit ] || continue
            if ls "$out/$name"/*-advise-*/check.json >/dev/null 2>&1; then dirs="$dirs${dirs:+,}$out/$name"
            else ready=0; fi
        done <<<"$(echo "$MIXES" | sed '/^$/d')"
        if [ $ready = 1 ]; then
            echo "--- fit on $dirs"
            "$build/run_suite" advise --fit "$dirs" --window "$window" --warmup-steps "$warmup" --results "$out" \
                ${ADVISE_ARGS:-} </dev/null || status=1
        else
            echo "--- the fit waits for every fit mix's check; the held-out mixes wait for the fit"
            break
        fi
    fi
    while IFS='|' read -r name mix prec r; do
        [ "$r" = "$role" ] || continue
        [ "$wanted" = "  " ] || [[ "$wanted" == *" $name "* ]] || continue
        launch "$name" "$mix" "$prec" "$r"
    done <<<"$(echo "$MIXES" | sed '/^$/d')"
    drain # the fit reads every fit mix's check; the score every held-out one's
done
echo "$MIXES" | sed '/^$/d' >"$out/mixes.txt"
python3 "$(dirname "$0")/advise_score.py" "$out" || status=1
exit $status
