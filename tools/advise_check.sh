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
# ADVISE_ARGS: more options for every run_suite advise (a CPU rehearsal: "--train tests/support/fake_train").
# Energy per sample is checked in the same runs, whatever the objective: the probes' power and each
# check run's window energy (NVML's energy counter) come from the GPU monitor, so it stays on
# (--no-monitor in ADVISE_ARGS is refused).
# The probing target sets the probes' wall time against `run_suite --mode all --mig-emulate --repeat
# 3` on the same mix: measured for the held-out mixes of ADVISE_MODE_ALL_MIXES (three by default, to
# keep device time) into OUT/<name>/mode_all_wall_s, once (resumable too).
set -u
build=${1:?usage: tools/advise_check.sh BUILD_DIR OUT [MIX_NAME...]}
out=${2:?usage: tools/advise_check.sh BUILD_DIR OUT [MIX_NAME...]}
shift 2
window=${ADVISE_WINDOW:-2}
warmup=${ADVISE_WARMUP:-20}
E=efficientnetv2_s:imagenet64@128
C=cait_xxs24:imagenet@128
# name|mix|precision|role: the study's uniform mixes at 2, 3 and 7 jobs and heterogeneous ones of
# S, M, L, EfficientNetV2-S, CaiT and XL, in tf32 and bf16. Fit: one of each kind and size, so the
# constants see time slices, packing and bandwidth contention; held out: the rest.
MIXES="
2S-tf32|2*S|tf32|fit
3M-tf32|3*M|tf32|fit
SMM-tf32|S+M+M|tf32|fit
S-E-bf16|S+$E|bf16|fit
7S-tf32|7*S|tf32|held-out
2M-bf16|2*M|bf16|held-out
3S-bf16|3*S|bf16|held-out
7S-bf16|7*S|bf16|held-out
SMM-bf16|S+M+M|bf16|held-out
S-L-tf32|S+L|tf32|held-out
M-C-tf32|M+$C|tf32|held-out
S-E-C-bf16|S+$E+$C|bf16|held-out
S-XL-tf32|S+XL|tf32|held-out
E-C-tf32|$E+$C|tf32|held-out
"
wanted=" ${*:-${ADVISE_MIXES:-}} "
case " ${ADVISE_ARGS:-} " in *" --no-monitor "*)
    echo "advise_check.sh: ADVISE_ARGS has --no-monitor: the energy check needs the GPU monitor" >&2; exit 2;;
esac
mkdir -p "$out"
status=0
one() { # name mix precision
    local d="$out/$1"
    if ls "$d"/*-advise-*/check.json >/dev/null 2>&1; then echo "--- $1: done before, skipped"; return 0; fi
    rm -rf "$d"; mkdir -p "$d"
    echo "--- $1: $2 in $3"
    local t0=$SECONDS before
    before=$(ls -d "$out"/*-advise-* 2>/dev/null | sort)
    # the cache and the constants live in OUT, shared by every mix; the advice's folder in OUT/<name>
    "$build/run_suite" advise --mix "$2" --precision "$3" --window "$window" --warmup-steps "$warmup" \
        --check --results "$out" ${ADVISE_ARGS:-} >"$d/advise.log" 2>&1
    local rc=$?
    local made
    made=$(comm -13 <(echo "$before") <(ls -d "$out"/*-advise-* 2>/dev/null | sort) | head -1)
    # linked, not moved: the check's runs name their serial baseline by its path (keep OUT relative,
    # as device_run.sh's is, so that the folder still reads after the tree moves)
    [ -n "$made" ] && ln -s "../$(basename "$made")" "$d/$(basename "$made")"
    echo "$((SECONDS - t0))" >"$d/wall_s"
    sed -n '/^check:/,$p' "$d/advise.log"
    [ $rc -eq 0 ] || { echo "    exit $rc (its log: $d/advise.log)"; status=1; }
}
# --mode all on the same mix, timed whole (process starts included, as the probes are)
mode_all() { # name mix precision
    local d="$out/$1"
    [ -f "$d/mode_all_wall_s" ] && return 0
    mkdir -p "$d"
    local t0=$SECONDS
    "$build/run_suite" --mode all --mig-emulate --mix "$2" --precision "$3" --window "$window" --warmup-steps "$warmup" \
        --repeat 3 --results "$d/mode-all" ${ADVISE_ARGS:-} >"$d/mode_all.log" 2>&1 ||
        { echo "    --mode all: exit $? (its log: $d/mode_all.log)"; status=1; return 0; }
    echo "$((SECONDS - t0))" >"$d/mode_all_wall_s"
    echo "    --mode all --repeat 3: $(cat "$d/mode_all_wall_s") s"
}
mode_all_mixes=" ${ADVISE_MODE_ALL_MIXES:-7S-tf32 SMM-bf16 S-L-tf32} "
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
                || status=1
        else
            echo "--- the fit waits for every fit mix's check; the held-out mixes wait for the fit"
            break
        fi
    fi
    while IFS='|' read -r name mix prec r; do
        [ "$r" = "$role" ] || continue
        [ "$wanted" = "  " ] || [[ "$wanted" == *" $name "* ]] || continue
        one "$name" "$mix" "$prec"
        [ "$r" = held-out ] && [[ "$mode_all_mixes" == *" $name "* ]] && mode_all "$name" "$mix" "$prec"
    done <<<"$(echo "$MIXES" | sed '/^$/d')"
done
echo "$MIXES" | sed '/^$/d' >"$out/mixes.txt"
python3 "$(dirname "$0")/advise_score.py" "$out" || status=1
exit $status
