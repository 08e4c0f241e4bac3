#!/usr/bin/env bash
# Issue 50 on the GPU, two parts (lab/device_run.sh's stages sm-target and sm-memory):
#
#   told    each mix of SMT_MIXES (7*S S+M+M) under green and mig-emulate, with the libraries told
#           each job's SMs (SUITE_SM_TARGET=1; off by default) and not (0): run_suite --mode all
#           --mig-emulate --skip naive,mps,streams (serial, mig-emulate, green) --repeat SMT_REPEAT
#           (3) into ROOT/told/<mix>/<on|off>; then bench/sm_target_table.py: each job's window
#           rate, STP and ANTT (median [min-max] over the repeats), told against not told, and what
#           each job's setup event says it told.
#   memory  why 7*S under mig-emulate used about half of seven times one job's GPU memory above idle
#           where naive and mps used all of it. Every run of 7*S (and S alone) below, with NVML's
#           per-process memory sampled beside it (nvidia-smi --query-compute-apps, every 200 ms):
#             alone         S under naive
#             naive, mps    7*S on the whole GPU
#             mps-share     7*S under MPS, each client at mig-emulate's SM share (--mps-sm 12), no limit
#             mps-limit     7*S under MPS, each client with mig-emulate's memory limit, no share
#             emulate       7*S under mig-emulate (share and limit), told
#             emulate-off   the same, SUITE_SM_TARGET=0
#           bench/sm_target_table.py --memory then sets side by side: the device above idle (the
#           study's figure), the sum of the jobs' processes (NVML), the sum of their footprints and
#           workspaces (their setup events), and per job what its process holds beyond its own
#           footprint (CUDA context, library handles, allocator). A smaller process with the same
#           footprint and workspace is accounting (what a context reserves for fewer SMs); a smaller
#           workspace or footprint would be the job running differently (a fidelity problem).
#
#   bench/sm_target.sh BUILD ROOT told|memory
set -u
build=${1:?build folder}
root=${2:?results folder}
part=${3:?told or memory}
here=$(cd "$(dirname "$0")" && pwd)
status=0

# Samples NVML's per-process memory into $1 until killed.
sample_processes() {
    nvidia-smi --query-compute-apps=timestamp,pid,process_name,used_memory --format=csv,noheader,nounits \
        -lms 200 >"$1" 2>/dev/null
}

# One run_suite with the per-process sampler beside it: NAME then run_suite's arguments; the
# environment of the caller passes through.
sampled_run() {
    local name=$1
    shift
    local d=$root/memory/$name
    rm -rf "$d"
    mkdir -p "$d"
    sample_processes "$d/processes.csv" &
    local sampler=$!
    "$build/run_suite" "$@" --results "$d/run" >"$d/run_suite.log" 2>&1 || status=1
    kill "$sampler" 2>/dev/null
    wait "$sampler" 2>/dev/null
    echo "--- $name: $(grep -cE '"event":"setup"' -r "$d/run" --include='*.log' 2>/dev/null) setup events, exit in $d/run_suite.log"
}

case $part in
told)
    for mix in ${SMT_MIXES:-7*S S+M+M}; do
        for told in 1 0; do
            d=$root/told/$(echo "$mix" | tr '*+' 'x_')/$([ $told = 1 ] && echo on || echo off)
            rm -rf "$d"
            mkdir -p "$(dirname "$d")"
            start=$(date +%s)
            # shellcheck disable=SC2086
            SUITE_SM_TARGET=$told "$build/run_suite" --mode all --mig-emulate --skip naive,mps,streams --mix "$mix" \
                --repeat "${SMT_REPEAT:-3}" ${SMT_OPTIONS:---window 5} --results "$d" >"$d.log" 2>&1 || status=1
            echo "--- $mix, SUITE_SM_TARGET=$told: $(( $(date +%s) - start )) s"
            grep -E "^(mode|serial|mig-emulate|green) " "$d.log" | tail -4
        done
    done
    python3 "$here/sm_target_table.py" "$root/told" || status=1
    ;;
memory)
    share=${SMT_SHARE:-12}   # mig-emulate's share of a 1g instance on the H100/H200 (16 of 132 SMs)
    limit=${SMT_LIMIT:-}     # its memory limit: read from the emulated run's environment below
    opts=${SMT_OPTIONS:---quick}
    # shellcheck disable=SC2086
    sampled_run alone --mode naive --mix S $opts
    # shellcheck disable=SC2086
    sampled_run naive --mode naive --mix '7*S' $opts
    # shellcheck disable=SC2086
    sampled_run mps --mode mps --mix '7*S' $opts
    # shellcheck disable=SC2086
    sampled_run emulate --mode mig-emulate --mix '7*S' $opts
    # shellcheck disable=SC2086
    SUITE_SM_TARGET=0 sampled_run emulate-off --mode mig-emulate --mix '7*S' $opts
    [ -n "$limit" ] || limit=$(grep -rhoE 'CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=[0-9]+[MG]' "$root/memory/emulate/run" \
        2>/dev/null | head -1 | sed 's/.*=0=//')
    echo "mig-emulate's per-client limit: ${limit:-unknown (SMT_LIMIT)}"
    # shellcheck disable=SC2086
    sampled_run mps-share --mode mps --mix '7*S' --mps-sm "$share" $opts
    # shellcheck disable=SC2086
    [ -n "$limit" ] && sampled_run mps-limit --mode mps --mix '7*S' --mps-mem "$limit" $opts
    python3 "$here/sm_target_table.py" --memory "$root/memory" || status=1
    ;;
*)
    echo "bench/sm_target.sh: the third argument is told or memory, not '$part'" >&2
    exit 2
    ;;
esac
ps -eo comm= | grep -c '^nvidia-cuda-mps' | sed 's/^/MPS processes left: /'
exit $status
