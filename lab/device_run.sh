#!/usr/bin/env bash
# Everything the GPU machine has to show, in stages, so one remote call can run several:
#   lab/device_run.sh build tests parity layout bench learn
#   build   configure and build in build-dev (sm_90 only: it is an H100/H200), warnings as errors
#   tests   the ctest label gpu
#   parity  timm reference files (FP32 and TF32), the parity test on both, a suite checkpoint
#           loaded strictly by timm
#   layout  bench/conv_layout (NCHW against NHWC convolutions)
#   bench   bench/run_model_bench.sh (suite against PyTorch eager and compiled)
#   step    the suite's bench_step alone for the three ResNet configurations
#   learn   resnet26 on Fashion-MNIST: 3 epochs and 10 epochs
#   suite   run_suite --mode all --mix S+S+M --quick (windows, timeline), no MPS daemon left,
#           --mode mig's message, mig-emulate, an oversized mix refused
#   colloc  bench/collocation.sh: S x {1,2,4,7} and M x {1,2,3}, naive and MPS
#   monitor 4*S under MPS with and without the GPU sampler (its cost)
#   models-gpu-tests   the GPU tests of EfficientNetV2-S, CaiT and DLRM alone
#   models-parity  timm parity for efficientnetv2_s (64x64/4) and cait_xxs24 (32x32 patch 4 and 224)
#   models-bench   EfficientNetV2-S 64x64/128 (SGD) and CaiT-XXS24 224/128 (AdamW) against PyTorch
#   models-learn   both on Fashion-MNIST for 5 epochs (CaiT with patch 4 at 32x32)
#   jpeg    ResNet-50 224 on 500x375 and 341x256 JPEGs (16 workers) against synthetic data
#   data    ResNet-50 224 on generated ImageNet-layout JPEGs (16 workers) against synthetic data,
#           resnet26 on a generated CIFAR-10 folder against synthetic, bench_jpeg at 1/8/16 threads
#   nvjpeg  nvJPEG in the build and on the device first (CMake's cache, the library train loads), the
#           GPU decoder's test (gpu_nvjpeg: GPU against host pixels, the decode rate), then ResNet-50
#           224 bf16 batch 256 from NVJPEG_IMAGES (10240) generated 500x375 JPEGs in the page cache,
#           --decode cpu and --decode gpu (16 workers) against synthetic data through the loader
#           and bench_step: images/s, the share of synthetic's, CPU cores used, images left to the host
#   nvjpeg-mps  4 ResNet-50 224 bf16 jobs (batch 256) under MPS fed from those JPEGs by the GPU
#           decoder, against 4 fed synthetic data: aggregate images/s, CPU cores (after nvjpeg)
#   jpeg-mix  those 4 JPEG-fed jobs through run_suite --mode mps (decode=gpu in the mix) with each of
#           JPEG_MIX_SLOTS (1 3) decoder slots, measured in its common windows (JPEG_MIX_WINDOW, 10 s),
#           against the same mix on synthetic data: bench/mix_windows.py's lines (after nvjpeg)
#   advise-check  tools/advise_check.sh into lab/results/advise, OUT/advise.tgz (issue 51): the advisor checked on fourteen mixes,
#           fitted on three, scored on the eleven held out (ADVISE_MIXES="name ...": a subset per call),
#           one mix on each of the machine's GPUs at once (ADVISE_GPUS, default every GPU)
#   sharing  --mode all (serial, naive, mps, mig-emulate under fill, streams, green) for S+M+M,
#           7*S and 3*M: STP, ANTT, fairness, SM activity, slowdowns (tools/sharing_table.py)
#   sharing-green-vs-mps green against mig-emulate (MPS) with the same SM counts for S+M+M; the MIG layout
#           sweep of S+M (emulated)
#   sharing-xl-host S+XL under --mode all; one job in job_host against train alone
#   study   run_suite --study small --quick and --study all --quick, each with its report
#   guard   tools/sharing_guard.sh (GUARD_RECORD=1: record): OUT/latest.json (tools/guard/latest.json)
#   faults  bench/faults.sh: every fault kind under naive, mps, mig-emulate, streams, green; kill -9
#   ddp-one-gpu    train --gpus 1 against plain train (loss trajectories)
#   ddp-two-gpus    (2+ GPUs) gpu_ddp, bench/ddp_seeds.sh, and M[gpus=2]+4*S across the cards in one
#           window: serial references, then mps (the ranks as MPS clients: --ddp-under mps) and naive
#   ddp-scaling  tools/ddp_scaling.sh (ResNet-50 224, tf32/bf16, 128/256 per GPU)
#   ddp-launched (4 GPUs) bench/ddp_launched.sh: train --gpus 4 against four ranks started by hand
#           (train --launcher env: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR=127.0.0.1, MASTER_PORT),
#           ResNet-50 224 with one seed: loss by epoch, replica hash, images/s side by side; then the
#           four again with rank 3 killed after step 20: each other rank's exit, time and message
#   ddp-mix  (2+ GPUs) tools/ddp_mix.sh: M[gpus=4]+8*S and 2*M[gpus=2]+8*S (DDP_MIXES) over every card,
#           --mode all (serial, naive, mps --ddp-under mps), DDP_MIX_REPEATS launches, the table
#   study-cards  run_suite --study small --quick --gpus <every card>, and its report
#   bf16-tests  the bf16 GPU tests and the float tests of the kernels they share
#   bf16-learn  Fashion-MNIST in bf16: resnet26 3 epochs (the float32 recipe), EfficientNetV2-S
#           (AdamW 3e-3) and CaiT (patch 4) 5 epochs
#   bf16-parity the bf16 step against PyTorch autocast bf16 on the same weights (float64 reference;
#           bound: a few times PyTorch's own bf16 error), every vision model or PARITY_RUNS
#           ("model classes size batch seed patch;...")
#   bf16-bench  suite bf16/tf32 against PyTorch compiled bf16/tf32 (BENCH_CONFIGS, TORCH_MODES; the
#           default adds "graphed", the whole step in one CUDA graph; compiles take 1-4 min each)
#   bf16-step   the suite's bench_step alone, tf32 and bf16, for the bf16-bench configurations
#   recipes EfficientNetV2-S on Fashion-MNIST, 5 epochs, for each recipe in RECIPES (name=options;
#           ...), seed in SEEDS and precision in PRECISIONS, four runs at a time; last-epoch accuracies
#   bf16-profile one step's kernels by kind under ncu (bench/kernel_breakdown.py), PROFILE_CONFIGS
#           (model:size:batch:precision, default resnet26 and resnet50 in bf16)
#   bf16-colloc 7*S and 3*M under MPS in tf32 and bf16, and the report that sets them side by side
#   sm-target  issue 50: 7*S and S+M+M (SMT_MIXES) under green and mig-emulate, the libraries told
#           each job's SMs against not told (SUITE_SM_TARGET), --repeat 3 (SMT_REPEAT), --window 5
#           (SMT_OPTIONS): each job's window rate, STP, ANTT side by side, what the setup events told
#           (bench/sm_target.sh told); then gpu_sm_target's lines (the partition's GEMM and
#           convolution against the whole GPU's, in the same partition)
#   sm-memory  issue 50's memory question: 7*S under naive, mps, mps with mig-emulate's SM share only,
#           with its memory limit only, mig-emulate told and not, and S alone, NVML's per-process
#           memory sampled beside each: what each process holds beyond its footprint and workspace
#           (bench/sm_target.sh memory)
#   sanitize  compute-sanitizer memcheck and racecheck over the kernels' GPU tests (SANITIZE_TESTS)
#   parity-committed  gpu_model_parity and gpu_dlrm_parity on tests/parity/reference/ (no env vars)
#   step-env-ab  bench_step for BENCH_CONFIGS (model:size:batch[:optimizer]) in AB_PRECISION (bf16), with
#           AB_ENV (default SUITE_PDL=0) and without, alternating, AB_ROUNDS (2) rounds
#   trace-cost  bench/trace_cost.sh: S, M and L alone, TRACE_REPEATS (3) times each, their step
#           with no tracer, in a measured window with the tracer subscribed (collection off), and
#           in the traced window (train --kernels), side by side with the costs in % (TRACE_SIZES,
#           TRACE_WINDOW_S: 5)
#   main-job  README's main job (run_suite --mode mps --mix S+S+M --quick), its output in main_job.txt
#   advise-law  issue 51: LAW_MIX (S+M+M) advised with --probes all and with two probes a job, each
#           candidate's per-job progress side by side (advise_law.md)
#   attribution  issue 49: ATTR_MIXES (S+M+M 7*S 3*M L+XL) each under --mode all --quick with --kernels
#           and ATTR_OPTIONS (--mig-emulate: --mode all runs MIG only where it can, so the cards need it)
#           (ATTR_WINDOW 1 s measured, ATTR_KERNELS_WINDOW 0.5 s traced) and its report; kernels.csv,
#           interference.csv, the summaries, reports and logs back in one attribution.tgz
#   trace-check  one job's kernels traced in place (train --kernels, resnet26 32x32/128 in
#           TRACE_PRECISION, tf32) against ncu's of the same step (bench/kernel_breakdown.py's
#           kinds), and the traced step against bench_step's untraced median (bench/trace_check.py)
#   conv-bn-probe  issue 52 (lab/conv_bn_roads.md): bench/conv_bn_probe on the device's cuDNN, the
#           bottlenecks' conv2 and conv3 with the wgrad, bf16 then half, one process each (roads 1
#           and 3); PROBE_ARGS replaces the options (one run; --max-configs N if a type outruns the
#           call); the side-by-side table closes each type's output
#   conv-bn-probe-all  road 3: every convolution of ResNet-50's forward in half, with the wgrad
#   cudnn-part  one part of bench/pack_cudnn.sh's archive arrived (carry .cudnn927/MANIFEST and
#           .cudnn927/part-NN): checked against MANIFEST and kept in /tmp/cudnn927-parts for the
#           calls that follow while the machine stays warm; says which parts are still missing
#   conv-bn-probe-927  road 1: assembles the parts (all must have arrived), then conv_bn_probe
#           --libraries-only and the probe with LD_LIBRARY_PATH on that cuDNN (and, with
#           CUDNN927_SUBSET="graph engines_runtime_compiled ...", --libraries-only on that subset)
#   gemm-bn-cutlass  road 2: bench/gemm_bn_cutlass (needs third_party/cutlass.tgz carried and the
#           build stage run with it), every 1x1 convolution of ResNet-50 224/256 in bf16
# Logs go to $OUT (or runs/device). On the device machine, first: . .devroot/env.sh
set -u
out=${OUT:-$PWD/runs/device}
mkdir -p "$out"
build=${BUILD_DIR:-build-dev}
if [ -f .devroot/env.sh ]; then . .devroot/env.sh; fi
# Fashion-MNIST where the Debian package puts it (the device image lacks the package)
if [ ! -e /usr/share/datasets/fashion-mnist ] && [ -d .devroot/usr/share/datasets/fashion-mnist ]; then
    mkdir -p /usr/share/datasets && ln -s "$PWD/.devroot/usr/share/datasets/fashion-mnist" /usr/share/datasets/
fi
if [ -z "${CUDNN_ROOT:-}" ]; then
    CUDNN_ROOT=$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__))' 2>/dev/null)
    export CUDNN_ROOT
fi
# nvJPEG (pip's nvidia-nvjpeg, which the device image may lack): an unpacked wheel carried in
# .whl/nvjpeg (nvidia/cu13/...) serves as NVJPEG_ROOT for the build stage
if [ -z "${NVJPEG_ROOT:-}" ] && [ -f .whl/nvjpeg/nvidia/cu13/include/nvjpeg.h ]; then
    NVJPEG_ROOT=$PWD/.whl/nvjpeg
    export NVJPEG_ROOT
fi
# The nvjpeg stages' data: NVJPEG_IMAGES (10240) generated 500x375 JPEGs, read once into the page cache
jpeg_folder() {
    local dir=/tmp/jpegs-nvjpeg
    [ -d $dir/train ] || "$build/bench_jpeg" --write $dir --images "${NVJPEG_IMAGES:-10240}" --classes 8 \
        --width 500 --height 375 >&2
    echo "$(find $dir/train -name '*.JPEG' | wc -l) JPEGs, $(( $(du -sk $dir/train | cut -f1) / 1024 )) MB" >&2
    find $dir/train -name '*.JPEG' -exec cat {} + >/dev/null
    echo $dir
}
status=0
for stage in "$@"; do
    echo "=== $stage $(date -u +%H:%M:%S)"
    case $stage in
    build)
        # CUTLASS's headers arrive packed (bench/install_cutlass.sh): unpacked before CMake looks for them
        if [ -f third_party/cutlass.tgz ] && [ ! -f third_party/cutlass/include/cutlass/cutlass.h ]; then
            tar xzf third_party/cutlass.tgz -C third_party || { echo "third_party/cutlass.tgz: cannot unpack"; exit 1; }
        fi
        # warnings are errors here as on the development machine: the device's compilers are newer
        cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSUITE_FUZZ=OFF \
            -DCMAKE_COMPILE_WARNING_AS_ERROR=ON >"$out/cmake.log" 2>&1 || { tail -30 "$out/cmake.log"; exit 1; }
        # -k: every file that fails shows its warnings, not only the first
        cmake --build "$build" -j16 -- -k >"$out/build.log" 2>&1 || {
            grep -E -A3 "error:|warning:" "$out/build.log" | head -80; exit 1; }
        echo "build: $(cmake --version | head -1), $(gcc --version | head -1), $(nvcc --version | tail -1)"
        grep -c warning "$out/build.log" | sed 's/^/build warnings: /'
        ;;
    tests)
        ctest --test-dir "$build" -L gpu --output-on-failure -j1 >"$out/gpu_tests.log" 2>&1 || status=1
        grep -E "Test +#|tests passed|accuracy|parameter change|FAIL" "$out/gpu_tests.log" | head -60
        # every test's whole output (the parity tests' numbers among them), passed or not
        gzip -c "$build/Testing/Temporary/LastTest.log" >"$out/gpu_tests_full.log.gz" 2>/dev/null
        ;;
    parity-debug)
        dir=/tmp/parity-debug
        for b in 8 16; do
            mkdir -p $dir-$b
            python3 tests/parity/timm_reference.py --model resnet26 --classes 10 --image-size 32 --batch $b --out $dir-$b --sgd-step 0.1 &&
            for path in legacy engine fastest; do
                echo "--- conv path $path, batch $b"
                SUITE_CONV_PATH=$path SUITE_PARITY_DIR=$dir-$b "$build/gpu_model_parity" 2>&1 | grep -vE "^\[ " | grep -E "resnet26 32x32|outside" | head -4
            done
        done
        ;;
    parity)
        # float64 references; the suite in float32 must stay within 10x PyTorch's own float32 error
        for run in "resnet26 10 32 16 1" "resnet26 10 32 16 2" "resnet50 100 64 8 0" \
                   "resnet50 100 64 8 1" "resnet152 10 64 8 0"; do
            read -r model classes size batch seed <<<"$run"
            dir=/tmp/parity-$model-$seed
            mkdir -p $dir
            python3 tests/parity/timm_reference.py --model $model --classes $classes --image-size $size \
                --batch $batch --seed $seed --out $dir --sgd-step 0.1 >/dev/null || status=1
            echo -n "seed $seed: "
            SUITE_PARITY_DIR=$dir "$build/gpu_model_parity" >"/tmp/parity_${model}_$seed.log" 2>&1 || status=1
            grep -E "^$model |outside" "/tmp/parity_${model}_$seed.log" | head -3
        done
        "$build/train" --model resnet50 --classes 10 --image-size 32 --batch 16 --epochs 1 --steps-per-epoch 3 \
            --save /tmp/suite_resnet50.safetensors >/dev/null 2>&1 &&
        python3 tests/parity/check_checkpoint.py /tmp/suite_resnet50.safetensors --model resnet50 --classes 10 || status=1
        ;;
    layout)
        "$build/conv_layout" --verbose | tee "$out/conv_layout.txt" || status=1
        ;;
    bench)
        bash bench/run_model_bench.sh "$build" "$out" || status=1
        ;;
    step)
        for path in legacy fastest; do
            for cfg in "resnet26 32 128" "resnet50 64 128" "resnet152 224 32"; do
                read -r model size batch <<<"$cfg"
                echo -n "conv path $path: "
                SUITE_CONV_PATH=$path "$build/bench_step" --model "$model" --image-size "$size" --batch "$batch" \
                    --classes 1000 || status=1
            done
        done
        ;;
    layers)
        for t in gpu_layers gpu_conv_engine; do
            "$build/$t" 2>&1 | grep -vE "^\[ +(RUN|OK) " | tail -40 || status=1
        done
        ;;
    learn)
        for epochs in 3 10; do
            "$build/train" --model resnet26 --data fashion-mnist --batch 128 --epochs $epochs --lr 0.1 --momentum 0.9 \
                --weight-decay 5e-4 --schedule one-cycle --warmup-pct 0.15 --eval --seed 1 2>&1 | tee "$out/learn_$epochs.log" || status=1
        done
        ;;
    learn-check)
        for variant in "fastest 1" "fastest 2" "legacy 1"; do
            read -r path seed <<<"$variant"
            echo "--- conv path $path, seed $seed"
            SUITE_CONV_PATH=$path "$build/train" --model resnet26 --data fashion-mnist --batch 128 --epochs 10 \
                --lr 0.1 --schedule one-cycle --warmup-pct 0.15 --eval --seed $seed 2>&1 | grep -E "^epoch" | \
                sed -E 's/ steps, .* samples\/s//' || status=1
        done
        ;;
    suite)
        rm -rf /tmp/suite && mkdir -p /tmp/suite
        "$build/run_suite" --mode all --mix S+S+M --quick --results /tmp/suite/all >"$out/suite_all.log" 2>&1 || status=1
        tail -25 "$out/suite_all.log"
        python3 bench/show_run.py /tmp/suite/all --timeline mps --rows 20
        ps -eo pid,ppid,stat,args | grep -E "[n]vidia-cuda-mps" && { echo "an MPS process is left"; status=1; } || echo "no MPS daemon left"
        "$build/run_suite" --mode mps --mix S+S+M --steps-per-epoch 300 --results /tmp/suite/mps300 >/dev/null 2>&1 || status=1
        python3 bench/show_run.py /tmp/suite/mps300 --timeline mps --rows 30
        echo "--- --mode mig (MIG is off here):"
        "$build/run_suite" --mode mig --mix S+S+M --quick --results /tmp/suite/mig 2>&1 | tail -6; echo "exit ${PIPESTATUS[0]}"
        echo "--- --mode mig --mig-emulate:"
        "$build/run_suite" --mode mig --mig-emulate --mix S+S+M --quick --results /tmp/suite/emu >"$out/suite_emu.log" 2>&1; echo "exit $?"
        grep -iE "emulat|plan|1g|2g|3g|4g|7g" "$out/suite_emu.log" | head -12
        python3 bench/show_run.py /tmp/suite/emu
        ps -eo pid,ppid,stat,args | grep -E "[n]vidia-cuda-mps" && { echo "an MPS process is left"; status=1; } || echo "no MPS daemon left"
        echo "--- oversized mix:"
        "$build/run_suite" --mode mps --mix 12*L --quick --results /tmp/suite/big 2>&1 | tail -4; echo "exit ${PIPESTATUS[0]}"
        cp -r /tmp/suite/all "$out/suite_run" 2>/dev/null
        ;;
    colloc)
        bash bench/collocation.sh "$build" /tmp/colloc | tee "$out/collocation.md" || status=1
        ;;
    monitor)
        for run in 1 2; do
            for flag in "" --no-monitor; do
                "$build/run_suite" --mode mps --mix 4*S --steps-per-epoch 1000 $flag --results /tmp/mon-$run$flag >/dev/null 2>&1 || status=1
                python3 - /tmp/mon-$run$flag "$flag" <<'PY'
import glob, json, sys
s = json.load(open(glob.glob(sys.argv[1] + "/**/summary.json", recursive=True)[0]))
m = s["monitor"]
print(f"4*S mps {sys.argv[2] or 'with monitor':<14} sum of timed rates {s['timed_samples_per_s_sum']:.0f} samples/s, "
      f"ticks {m['ticks']}, mean tick {m.get('mean_tick_cpu_ms')} ms CPU, sampler CPU fraction {m.get('cpu_fraction')}")
PY
            done
        done
        ;;
    data)
        rm -rf /tmp/jpegs /tmp/cifar
        "$build/bench_jpeg" --write /tmp/jpegs --images 5120 --classes 8
        for run in "synthetic" "imagenet --data-root /tmp/jpegs --workers 16"; do
            echo "--- resnet50 224 batch 128, data $run"
            "$build/train" --model resnet50 --batch 128 --image-size 224 --classes 1000 --epochs 2 --data $run \
                --json 2>/dev/null | python3 bench/epoch_lines.py
        done
        echo "--- data already on the GPU (bench_step):"
        "$build/bench_step" --model resnet50 --image-size 224 --batch 128 --classes 1000 || status=1
        python3 - <<'PY'
import os
os.makedirs("/tmp/cifar", exist_ok=True)
rng = os.urandom
for name, n in [(f"data_batch_{i}.bin", 10000) for i in range(1, 6)] + [("test_batch.bin", 10000)]:
    with open(f"/tmp/cifar/{name}", "wb") as f:
        buf = bytearray(rng(3073 * n))
        for r in range(n):
            buf[r * 3073] %= 10
        f.write(buf)
print("wrote a CIFAR-10 binary folder of random records under /tmp/cifar")
PY
        for run in "cifar10 --data-root /tmp/cifar" "synthetic"; do
            echo "--- resnet26 32x32 batch 128, data $run"
            "$build/train" --model resnet26 --batch 128 --epochs 2 --data $run 2>&1 | grep -E "^epoch|error"
        done
        "$build/bench_jpeg" --images 800 --threads 1,8,16 || status=1
        ;;
    models-gpu-tests)
        for t in gpu_optim gpu_batchnorm gpu_efficientnet gpu_cait gpu_cait_model gpu_dlrm; do
            [ -x "$build/$t" ] || { echo "$t: not built"; continue; }
            "$build/$t" >"$out/$t.log" 2>&1; echo "$t: exit $?"
            grep -vE "^\[ +(RUN|OK) +\]" "$out/$t.log" | head -40
        done
        ;;
    models-parity)
        for run in "efficientnetv2_s 10 64 4 0 16" "cait_xxs24 10 32 4 0 4" "cait_xxs24 10 224 2 1 16"; do
            read -r model classes size batch seed patch <<<"$run"
            dir=/tmp/parity-$model-$size
            mkdir -p $dir
            python3 tests/parity/timm_reference.py --model $model --classes $classes --image-size $size \
                --batch $batch --seed $seed --patch-size $patch --out $dir --sgd-step 0.1 | cut -c1-300 || status=1
            SUITE_PARITY_MODELS=$model SUITE_PARITY_DIR=$dir "$build/gpu_model_parity" >"$out/parity_${model}_$size.log" 2>&1 || status=1
            grep -E "^$model |outside|relative error" "$out/parity_${model}_$size.log" | head -12
        done
        ;;
    models-bench)
        BENCH_CONFIGS="efficientnetv2_s:64:128:sgd cait_xxs24:224:128:adamw" bash bench/run_model_bench.sh "$build" "$out" || status=1
        ;;
    models-learn)
        "$build/train" --model efficientnetv2_s --data fashion-mnist --batch 128 --epochs 5 --lr 0.05 --nesterov --eval --seed 1 2>&1 | \
            tee "$out/learn_effnet.log" | grep -E "^epoch|error|parameters" || status=1
        "$build/train" --model cait_xxs24 --data fashion-mnist --patch-size 4 --batch 128 --epochs 5 --eval --seed 1 2>&1 | \
            tee "$out/learn_cait.log" | grep -E "^epoch|error|parameters" || status=1
        ;;
    jpeg)
        # the JPEG-fed ResNet-50 against synthetic data, at ImageNet's typical size and at the
        # common "shorter side 256" pre-resized copy
        for size in "500 375" "341 256"; do
            read -r w h <<<"$size"
            rm -rf /tmp/jpegs-$w
            "$build/bench_jpeg" --write /tmp/jpegs-$w --images 5120 --classes 8 --width $w --height $h
            echo "--- resnet50 224 batch 128, ${w}x${h} JPEGs, 16 workers"
            "$build/train" --model resnet50 --batch 128 --image-size 224 --classes 1000 --epochs 2 \
                --data imagenet --data-root /tmp/jpegs-$w --workers 16 --json 2>/dev/null | python3 bench/epoch_lines.py
        done
        echo "--- resnet50 224 batch 128, synthetic data through the host loader"
        "$build/train" --model resnet50 --batch 128 --image-size 224 --classes 1000 --epochs 2 --steps-per-epoch 40 \
            --json 2>/dev/null | python3 bench/epoch_lines.py
        echo "--- data already on the GPU (bench_step):"
        "$build/bench_step" --model resnet50 --image-size 224 --batch 128 --classes 1000 || status=1
        "$build/bench_jpeg" --images 800 --threads 1,8,16 | tail -7 || status=1
        ;;
    nvjpeg)
        grep -E "^(NVJPEG_INCLUDE_DIR|NVJPEG_LIBRARY|SUITE_NVJPEG)[:=]" "$build/CMakeCache.txt"
        if ! grep -q "^NVJPEG_LIBRARY:FILEPATH=/" "$build/CMakeCache.txt"; then
            echo "nvJPEG is not in the build (pip install nvidia-nvjpeg, or carry .whl/nvjpeg): stage skipped"
            status=1; continue
        fi
        ldd "$build/train" | grep -i nvjpeg || { echo "train does not load libnvjpeg"; status=1; continue; }
        timeout 600 "$build/gpu_nvjpeg" >"$out/gpu_nvjpeg.log" 2>&1; echo "gpu_nvjpeg: exit $?"
        grep -vE "^\[ +(RUN|OK) +\]" "$out/gpu_nvjpeg.log" | head -40
        dir=$(jpeg_folder)
        # synthetic epochs as long as the folder's (the same steps)
        steps=$(( ${NVJPEG_IMAGES:-10240} / 256 ))
        for run in "synthetic synthetic --steps-per-epoch $steps" "cpu imagenet --data-root $dir --decode cpu" \
            "gpu imagenet --data-root $dir --decode gpu"; do
            read -r name data <<<"$run"
            echo "--- resnet50 224 bf16 batch 256, $name"
            # shellcheck disable=SC2086
            "$build/train" --model resnet50 --batch 256 --image-size 224 --classes 1000 --precision bf16 --epochs 4 \
                --workers 16 --data $data --json 2>"$out/nvjpeg_$name.err" >"$out/nvjpeg_$name.jsonl" || status=1
            python3 bench/epoch_lines.py <"$out/nvjpeg_$name.jsonl"; tail -3 "$out/nvjpeg_$name.err"
        done
        python3 - "$out" <<'PY'
import json, sys
def last_epochs(name):
    events = [json.loads(l) for l in open(f"{sys.argv[1]}/nvjpeg_{name}.jsonl") if l.startswith("{")]
    return [e for e in events if e.get("event") == "epoch" and not e.get("warmup")]
rates = {}
for name in ("synthetic", "cpu", "gpu"):
    epochs = last_epochs(name)
    if not epochs:
        print(f"{name}: no timed epoch"); continue
    rate = sum(e["samples"] for e in epochs) / sum(e["seconds"] for e in epochs)
    cores = sum(e["cpu_cores"] * e["seconds"] for e in epochs) / sum(e["seconds"] for e in epochs)
    rates[name] = rate
    share = f"{rate / rates['synthetic']:.1%} of synthetic" if "synthetic" in rates else ""
    host = f", {epochs[-1]['host_decoded']:.0f} left to the host" if "host_decoded" in epochs[-1] else ""
    print(f"{name:>9}: {rate:7.0f} images/s {share:>20}, {cores:.1f} CPU cores{host}")
PY
        echo "--- data already on the GPU (bench_step):"
        "$build/bench_step" --model resnet50 --image-size 224 --batch 256 --classes 1000 --precision bf16 || status=1
        (cd "$out" && tar czf nvjpeg-events.tgz nvjpeg_*.jsonl nvjpeg_*.err gpu_nvjpeg.log && rm nvjpeg_*.jsonl nvjpeg_*.err)
        ;;
    nvjpeg-mps)
        dir=$(jpeg_folder)
        export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
        mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
        nvidia-cuda-mps-control -d || { echo "MPS did not start"; status=1; continue; }
        steps=$(( ${NVJPEG_IMAGES:-10240} / 256 ))
        for run in "synthetic synthetic --steps-per-epoch $steps" "gpu imagenet --data-root $dir --decode gpu"; do
            read -r name data <<<"$run"
            for k in 1 2 3 4; do
                # shellcheck disable=SC2086
                "$build/train" --model resnet50 --batch 256 --image-size 224 --classes 1000 --precision bf16 \
                    --epochs 4 --workers 4 --seed $k --data $data --json >"$out/mps4_${name}_$k.jsonl" \
                    2>"$out/mps4_${name}_$k.err" &
            done
            wait
        done
        echo quit | nvidia-cuda-mps-control
        for _ in $(seq 20); do ps -eo comm= | grep -q '^nvidia-cuda-mps' || break; sleep 0.5; done
        ps -eo comm= | grep -c '^nvidia-cuda-mps' | sed 's/^/MPS processes left: /'
        for f in "$out"/mps4_*.jsonl; do
            grep -q '"event":"done"' "$f" || { echo "--- ${f##*/} did not finish:"; tail -4 "${f%.jsonl}.err"; }
        done
        python3 - "$out" <<'PY'
import json, sys
for name in ("synthetic", "gpu"):
    rates, cores, host = [], 0.0, 0
    for k in range(1, 5):
        events = [json.loads(l) for l in open(f"{sys.argv[1]}/mps4_{name}_{k}.jsonl") if l.startswith("{")]
        epochs = [e for e in events if e.get("event") == "epoch" and not e.get("warmup")]
        if not epochs:
            print(f"{name} job {k}: no timed epoch"); continue
        seconds = sum(e["seconds"] for e in epochs)
        rates.append(sum(e["samples"] for e in epochs) / seconds)
        cores += sum(e["cpu_cores"] * e["seconds"] for e in epochs) / seconds
        host += max(0, epochs[-1].get("host_decoded", 0))
    print(f"4 x resnet50 224 bf16 under MPS, {name:>9}: {sum(rates):7.0f} images/s in all "
          f"(jobs {', '.join(f'{r:.0f}' for r in rates)}), {cores:.1f} CPU cores, {host} decoded on the host")
PY
        (cd "$out" && tar czf mps4-events.tgz mps4_*.jsonl mps4_*.err && rm mps4_*.jsonl mps4_*.err)
        ;;
    jpeg-mix)
        # the same 4 jobs under MPS in run_suite's common windows (their rates over one interval, not
        # each job's own epochs): fed from the folder by the GPU decoder with each of JPEG_MIX_SLOTS
        # (1 3) decoder slots, then on synthetic data of the same shape (the mix without the folder)
        dir=$(jpeg_folder)
        names=()
        for slots in ${JPEG_MIX_SLOTS:-1 3}; do names+=("jpeg$slots"); done
        for name in "${names[@]}" synthetic; do
            # 10 s windows: a job's rate then moves in steps of 26 samples/s (3 s: 85, 1.3% of a job)
            mix="4*resnet50:imagenet@256[precision=bf16]" root=()
            [ $name != synthetic ] && mix="4*resnet50:imagenet@256[precision=bf16,decode=gpu,decode_slots=${name#jpeg}]" \
                root=(--data-root "$dir")
            echo "--- $name: $mix"
            rm -rf "/tmp/jpeg-mix/$name"
            "$build/run_suite" --mode mps --mix "$mix" "${root[@]}" --window "${JPEG_MIX_WINDOW:-10}" --windows 3 \
                --warmup-steps 20 --results "/tmp/jpeg-mix/$name" >"$out/jpeg_mix_$name.txt" 2>&1 || status=1
            tail -8 "$out/jpeg_mix_$name.txt"
        done
        python3 bench/mix_windows.py /tmp/jpeg-mix/synthetic/*/ $(for n in "${names[@]}"; do echo /tmp/jpeg-mix/$n/*/; done) |
            tee "$out/jpeg_mix.txt"
        (cd /tmp && tar czf "$out/jpeg-mix-runs.tgz" jpeg-mix)
        ;;
    advise-check)
        # resumable across calls: the results so far travel in the tree (lab/results/advise, the
        # folder each call's OUT/advise is copied back into), the mixes done there are skipped
        adv=${ADVISE_OUT:-lab/results/advise}
        # one mix a GPU at once on a machine of several (the same GPU model: their figures compare)
        # ADVISE_S: cut the mixes at so many seconds (timeout), so that the call's files come back;
        # a cut mix runs again next call
        ADVISE_GPUS=${ADVISE_GPUS:-$(nvidia-smi --query-gpu=index --format=csv,noheader | tr '\n' ' ')} \
            timeout "${ADVISE_S:-100000}" tools/advise_check.sh "$build" "$adv" ${ADVISE_MIXES:-} || status=1
        # a cut run_suite's MPS daemons outlive it (the group's signal): stopped by their process ids
        left=$(ps -eo pid=,comm= | awk '$2 ~ /^nvidia-cuda-mps/ {print $1}')
        [ -z "$left" ] || { echo "MPS processes left: $(echo $left | wc -w), stopped"; kill $left; }
        # one tarball: a device call brings back no file whose name holds '+', nor very many files
        tar czf "$out/advise.tgz" "$adv"
        ;;
    sharing)
        steps=${SHARING_STEPS:-500}
        for mix in ${SHARING_MIXES:-S+M+M 7*S 3*M}; do
            d=/tmp/sharing/$(echo "$mix" | tr '*+' 'x_')
            rm -rf "$d"
            "$build/run_suite" --mode all --mig-emulate --mix "$mix" --steps-per-epoch $steps --results "$d" \
                >"$out/sharing_$(basename $d).log" 2>&1 || status=1
            echo "--- $mix, --mode all, $steps steps an epoch"
            grep -A9 "^mode  *status" "$out/sharing_$(basename $d).log" | head -14
            python3 tools/sharing_table.py "$d"
        done
        ps -eo comm= | grep -c '^nvidia-cuda-mps' | sed 's/^/MPS processes left: /'
        ;;
    sharing-green-vs-mps)
        steps=${SHARING_STEPS:-500}
        d=/tmp/sharing2; rm -rf $d; mkdir -p $d
        echo "--- S+M+M: mig-emulate through MPS against the same SM counts as green contexts"
        for via in mps green; do
            "$build/run_suite" --mode mig-emulate --via $via --mix S+M+M --steps-per-epoch $steps --results $d/via-$via \
                >"$out/via_$via.log" 2>&1 || status=1
            grep -E "SMs|partition|1g|2g|3g|4g|7g" "$out/via_$via.log" | head -8
        done
        python3 tools/sharing_table.py $d/via-mps $d/via-green
        echo "--- layout sweep, S+M, emulated"
        "$build/run_suite" --mode mig-emulate --mig-layouts all --mix S+M --steps-per-epoch $steps --results $d/layouts \
            >"$out/layouts.log" 2>&1 || status=1
        find $d/layouts -name layouts.csv -exec cat {} \;
        tail -20 "$out/layouts.log"
        ;;
    sharing-xl-host)
        d=/tmp/sharing3; rm -rf $d; mkdir -p $d
        echo "--- S+XL, --mode all"
        "$build/run_suite" --mode all --mig-emulate --mix S+XL --steps-per-epoch 300 --results $d/sxl \
            >"$out/sxl.log" 2>&1 || status=1
        grep -A9 "^mode  *status" "$out/sxl.log" | head -14
        grep -E "summed|not summed|samples/s in total" "$out/sxl.log" | head -8
        python3 tools/sharing_table.py $d/sxl
        echo "--- one job in the host process against train alone (resnet26 32x32/128, 3000 steps)"
        for run in 1 2; do
            "$build/train" --model resnet26 --batch 128 --image-size 32 --classes 10 --epochs 2 --steps-per-epoch 3000 \
                --json 2>/dev/null | python3 bench/epoch_lines.py | tail -1 | sed 's/^/train alone:    /'
            "$build/job_host" --job --model resnet26 --batch 128 --image-size 32 --classes 10 --epochs 2 \
                --steps-per-epoch 3000 --json 2>/dev/null | sed -E 's/^\{"job":[0-9]+,/{/' | python3 bench/epoch_lines.py | \
                tail -1 | sed 's/^/in job_host:    /'
        done
        ps -eo comm= | grep -c '^nvidia-cuda-mps' | sed 's/^/MPS processes left: /'
        ;;
    study)
        rm -rf /tmp/study; mkdir -p /tmp/study
        for set in small all; do
            start=$(date +%s)
            limit=${STUDY_LIMIT:-100000}; [ $set = small ] && limit=100000
            timeout -s INT $limit "$build/run_suite" --study $set --quick --results /tmp/study/$set >"$out/study_$set.log" 2>&1
            echo "--- study $set --quick: exit $?, $(( $(date +%s) - start )) s"
            grep -E "^\[study\] (report|[0-9]+ runs)|does not fit|failed" "$out/study_$set.log" | head -20
            r=$(find /tmp/study/$set -maxdepth 2 -name report.html | head -1)
            [ -n "$r" ] && { ls -l "$r"; cp "$r" "$out/report_$set.html"; }
            python3 tools/sharing_table.py /tmp/study/$set | grep -v "| - | - | - |" | head -40
            du -sh /tmp/study/$set
        done
        ;;
    guard)
        # GUARD_RECORD=1: record tools/guard/expected/<GPU>.json (copied to OUT/expected); the revision
        # measured comes from SUITE_GUARD_REVISION/SUITE_GUARD_COMMIT where this copy's git lags
        mkdir -p "$out/expected"
        SUITE_GUARD_EXPECTED_DIR=${GUARD_RECORD:+$out/expected} bash tools/sharing_guard.sh "$build" /tmp/guard \
            ${GUARD_RECORD:+--record} >"$out/guard.txt" 2>&1 || status=1
        [ -n "${GUARD_RECORD:-}" ] || cp -r tools/guard/expected/. "$out/expected/" 2>/dev/null
        grep -E "took|verdict|BELOW|ABOVE|NOT MEASURED|recorded" "$out/guard.txt" | head -20
        cp /tmp/guard/latest.json /tmp/guard/guard.md "$out/" 2>/dev/null
        ;;
    faults)
        MODES=${MODES:-naive mps mig-emulate streams green} bash bench/faults.sh "$build" /tmp/faults | tee -a "$out/faults.md" || status=1
        cp /tmp/faults/*/outcome.json "$out/" 2>/dev/null; tar czf "$out/faults-runs.tgz" -C /tmp faults 2>/dev/null
        ;;
    ddp-one-gpu)
        # two plain runs show how far plain training repeats itself across processes
        for how in "" "" "--gpus 1"; do
            "$build/train" --model resnet26 --batch 128 --image-size 32 --classes 10 --epochs 3 --steps-per-epoch 50 \
                --seed 3 --json $how 2>/dev/null | grep '"event":"epoch"' | \
                python3 -c 'import sys, json; print("'"${how:-plain}"'", [json.loads(l)["loss"] for l in sys.stdin])'
        done
        "$build/gpu_ddp" 2>&1 | grep -vE "^\[ " | head -30
        ;;
    ddp-two-gpus)
        export NCCL_NVLS_ENABLE=0
        # first a 2-GPU smoke run that cannot hang the call: session 14 lost a whole call to runs
        # of train --gpus 2 that never ended (NCCL's own account of its set-up kept in OUT)
        NCCL_DEBUG=INFO timeout -s KILL 90 "$build/train" --model resnet26 --data synthetic --batch 64 --epochs 1 \
            --steps-per-epoch 5 --gpus 2 --json >"$out/smoke.jsonl" 2>"$out/smoke.log"
        rc=$?; echo "train --gpus 2 smoke: exit $rc"; grep -E "^train:|NCCL WARN|error" "$out/smoke.log" | head -20
        if [ $rc -ne 0 ]; then pkill -9 -f "$build/train" 2>/dev/null; tail -30 "$out/smoke.log"; status=1; continue; fi
        timeout 300 "$build/gpu_ddp" >"$out/gpu_ddp.log" 2>&1; echo "gpu_ddp: exit $?"
        grep -E "^(ok|FAILED|skipped)|^ *[0-9]+  " "$out/gpu_ddp.log" | head -40
        bash bench/ddp_seeds.sh "$build" /tmp/ddp-seeds | tee "$out/ddp_seeds.md" || status=1
        rm -rf /tmp/ddpmix; mix='M[gpus=2]+4*S'; window="--window 4 --windows 2"
        # one start barrier and one common window across the cards (the go relay)
        timeout -s KILL 150 "$build/run_suite" --gpus 0,1 --mode serial --mix "$mix" $window --results /tmp/ddpmix/serial \
            >"$out/ddpmix_serial.log" 2>&1; echo "serial: exit $?"
        base=$(ls -d /tmp/ddpmix/serial/*/ | head -1)
        for how in "mps --ddp-under mps" "naive"; do
            read -r mode extra <<<"$how"
            timeout -s KILL 100 "$build/run_suite" --gpus 0,1 --mode $mode $extra --mix "$mix" $window --baseline "$base" \
                --results /tmp/ddpmix/$mode >"$out/ddpmix_$mode.log" 2>&1; echo "$how: exit $?"
            grep -vE "^\[" "$out/ddpmix_$mode.log" | tail -14
        done
        echo quit | nvidia-cuda-mps-control 2>/dev/null
        tar czf "$out/ddpmix.tgz" -C /tmp ddpmix ddp-seeds 2>/dev/null
        ;;
    ddp-scaling)
        bash tools/ddp_scaling.sh "$build" /tmp/ddp-scaling "${DDP_STEPS:-30}" | tee "$out/ddp_scaling.md" || status=1
        ;;
    ddp-launched)
        timeout -s TERM 540 bash bench/ddp_launched.sh "$build" /tmp/ddp-launched "${DDP_LAUNCHED_STEPS:-60}" |
            tee "$out/ddp_launched.md"
        [ "${PIPESTATUS[0]}" = 0 ] || status=1
        tar czf "$out/ddp_launched.tgz" -C /tmp ddp-launched 2>/dev/null
        ;;
    ddp-mix)
        # data-parallel jobs beside small jobs over every card, serial/naive/mps, DDP_MIX_REPEATS launches
        bash tools/ddp_mix.sh "$build" /tmp/ddp-mix "${DDP_MIX_REPEATS:-3}" | tee "$out/ddp_mix.md" || status=1
        tar czf "$out/ddp_mix-runs.tgz" -C /tmp ddp-mix 2>/dev/null
        ;;
    study-cards)
        # the small study spread over every card, and its report
        rm -rf /tmp/study-cards; start=$(date +%s)
        cards=$(seq -s, 0 $(( $(nvidia-smi -L | wc -l) - 1 )))
        timeout -s INT 400 "$build/run_suite" --study small --quick --gpus "$cards" --results /tmp/study-cards \
            >"$out/study_cards.log" 2>&1
        echo "--- study small --quick --gpus $cards: exit $?, $(( $(date +%s) - start )) s"
        grep -E "^\[study\] (report|[0-9]+ runs)|does not fit|failed|error" "$out/study_cards.log" | head -20
        r=$(find /tmp/study-cards -maxdepth 2 -name report.html | head -1)
        [ -n "$r" ] && cp "$r" "$out/report_study_cards.html"
        tar czf "$out/study_cards-runs.tgz" -C /tmp study-cards 2>/dev/null
        ;;
    bf16-tests)
        for t in gpu_bf16 gpu_bf16_efficientnet gpu_bf16_cait gpu_efficientnet gpu_cait gpu_cait_model; do
            timeout 300 "$build/$t" >"$out/$t.log" 2>&1; echo "$t: exit $?"
            grep -vE "^\[ +(RUN|OK) +\]" "$out/$t.log" | head -40
        done
        ;;
    bf16-learn)
        "$build/train" --model resnet26 --data fashion-mnist --batch 128 --epochs 3 --lr 0.1 --momentum 0.9 \
            --weight-decay 5e-4 --schedule one-cycle --warmup-pct 0.15 --eval --seed 1 --precision bf16 2>&1 | \
            tee "$out/learn_bf16_resnet26.log" | grep -E "^epoch|error|parameters|peak" || status=1
        # AdamW 3e-3: SGD 0.05 Nesterov reaches 0.85 in 2 of 4 seeds, in tf32 as in bf16 (NOTES.md, session 6)
        "$build/train" --model efficientnetv2_s --data fashion-mnist --batch 128 --epochs 5 --optimizer adamw --lr 3e-3 \
            --eval --seed 1 --precision bf16 2>&1 | tee "$out/learn_bf16_effnet.log" | grep -E "^epoch|error|parameters|peak" || status=1
        "$build/train" --model cait_xxs24 --data fashion-mnist --patch-size 4 --batch 128 --epochs 5 --eval --seed 1 \
            --precision bf16 2>&1 | tee "$out/learn_bf16_cait.log" | grep -E "^epoch|error|parameters|peak" || status=1
        ;;
    bf16-parity)
        # PARITY_RUNS: "model classes size batch seed patch;..." (runs apart by ';')
        IFS=';' read -ra runs <<<"${PARITY_RUNS:-resnet26 10 32 16 1 16;resnet50 100 64 8 0 16;resnet152 10 64 8 0 16;efficientnetv2_s 10 64 4 0 16;cait_xxs24 10 32 4 0 4;cait_xxs24 10 224 2 1 16}"
        for run in "${runs[@]}"; do
            read -r model classes size batch seed patch <<<"$run"
            dir=/tmp/parity-bf16-$model-$size
            mkdir -p $dir
            python3 tests/parity/timm_reference.py --model $model --classes $classes --image-size $size \
                --batch $batch --seed $seed --patch-size $patch --bf16 1 --out $dir --sgd-step 0.1 | cut -c1-400 || status=1
            SUITE_PARITY_BF16=1 SUITE_PARITY_MODELS=$model SUITE_PARITY_DIR=$dir "$build/gpu_model_parity" \
                >"$out/parity_bf16_${model}_$size.log" 2>&1 || status=1
            grep -E "^$model |outside|relative error|skipped" "$out/parity_bf16_${model}_$size.log" | head -12
        done
        ;;
    bf16-bench)
        BENCH_PRECISIONS="tf32 bf16" TORCH_MODES=${TORCH_MODES:-"compiled graphed"} \
            BENCH_CONFIGS=${BENCH_CONFIGS:-"resnet26:32:128 resnet50:64:128 resnet152:224:32 efficientnetv2_s:64:128:sgd cait_xxs24:224:128:adamw"} \
            bash bench/run_model_bench.sh "$build" "$out" || status=1
        ;;
    bf16-step)
        for cfg in ${BENCH_CONFIGS:-resnet26:32:128 resnet50:64:128 resnet152:224:32 efficientnetv2_s:64:128:sgd cait_xxs24:224:128:adamw}; do
            IFS=: read -r model size batch optimizer <<<"$cfg"
            for precision in tf32 bf16; do
                echo -n "$precision: "
                "$build/bench_step" --model "$model" --image-size "$size" --batch "$batch" --classes 1000 \
                    --optimizer "${optimizer:-sgd}" --precision $precision || status=1
            done
        done
        ;;
    recipes)
        IFS=';' read -ra recipes <<<"${RECIPES:-adamw=--optimizer adamw;sgd-0.02=--lr 0.02}"
        runs=()
        for recipe in "${recipes[@]}"; do
            for precision in ${PRECISIONS:-bf16 tf32}; do
                for seed in ${SEEDS:-1 2 3 4}; do runs+=("${recipe%%=*}|$precision|$seed|${recipe#*=}"); done
            done
        done
        for ((i = 0; i < ${#runs[@]}; i++)); do
            IFS='|' read -r name precision seed options <<<"${runs[$i]}"
            # shellcheck disable=SC2086
            "$build/train" --model efficientnetv2_s --data fashion-mnist --batch 128 --epochs 5 --eval --seed "$seed" \
                --precision "$precision" $options >"$out/recipe_${name}_${precision}_$seed.log" 2>&1 &
            if (( (i + 1) % 4 == 0 )); then wait; fi
        done
        wait
        for run in "${runs[@]}"; do
            IFS='|' read -r name precision seed options <<<"$run"
            printf '%-10s %-5s seed %s: ' "$name" "$precision" "$seed"
            grep -oE "test acc [0-9.]+" "$out/recipe_${name}_${precision}_$seed.log" | awk '{printf "%s ", $3} END {print ""}'
        done
        ;;
    bf16-profile)
        for cfg in ${PROFILE_CONFIGS:-resnet26:32:128:bf16 resnet50:64:128:bf16}; do
            IFS=: read -r model size batch precision <<<"$cfg"
            args=(--model "$model" --image-size "$size" --batch "$batch" --classes 1000 --precision "$precision")
            median=$("$build/bench_step" "${args[@]}" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["median_ms"])')
            log="$out/ncu_${model}_${size}_$precision.csv"
            ncu --profile-from-start off --clock-control none --cache-control none --metrics gpu__time_duration.sum \
                --csv --page raw "$build/bench_step" "${args[@]}" --steps 5 --warmup 5 --profile >"$log" 2>&1 || status=1
            echo "--- $model ${size}x$size/$batch $precision (bench_step median $median ms)"
            python3 bench/kernel_breakdown.py "$log" --step-ms "$median" || status=1
        done
        ;;
    bf16-colloc)
        d=/tmp/bf16-colloc; rm -rf $d; mkdir -p $d
        for mix in "7*S:${COLLOC_STEPS_S:-500}" "3*M:${COLLOC_STEPS_M:-300}"; do
            steps=${mix#*:}; mix=${mix%:*}
            for precision in tf32 bf16; do
                name=$(echo "$mix" | tr '*' 'x')-$precision
                "$build/run_suite" --mode mps --mix "$mix" --precision $precision --steps-per-epoch $steps \
                    --results $d/$name >"$out/colloc_$name.log" 2>&1 || status=1
                echo "--- $mix under MPS, $precision, $steps steps an epoch"
                grep -E "samples/s in total|^mode  *status" -A2 "$out/colloc_$name.log" | head -8
            done
        done
        python3 tools/sharing_table.py $d
        "$build/run_suite" report $d -o "$out/report_bf16.html" || status=1
        ps -eo comm= | grep -c '^nvidia-cuda-mps' | sed 's/^/MPS processes left: /'
        ;;
    step-env-ab)
        for cfg in ${BENCH_CONFIGS:-resnet26:32:128 resnet50:64:128 resnet152:224:32 efficientnetv2_s:64:128}; do
            IFS=: read -r model size batch optimizer <<<"$cfg"
            for ((round = 1; round <= ${AB_ROUNDS:-2}; round++)); do
                for with in yes no; do
                    label=$([ $with = yes ] && echo "${AB_ENV:-SUITE_PDL=0}" || echo "default")
                    printf '%-28s round %d: ' "$label" "$round"
                    # shellcheck disable=SC2046
                    env $([ $with = yes ] && echo "${AB_ENV:-SUITE_PDL=0}") "$build/bench_step" --model "$model" \
                        --image-size "$size" --batch "$batch" --classes 1000 --optimizer "${optimizer:-sgd}" \
                        --precision "${AB_PRECISION:-bf16}" || status=1
                done
            done
        done
        ;;
    sm-target)
        "$build/gpu_sm_target" 2>&1 | grep -vE "^\[ +(RUN|OK) +\]" | tee "$out/gpu_sm_target.log" | head -40
        bash bench/sm_target.sh "$build" /tmp/sm-target told 2>&1 | tee "$out/sm_target.md"
        [ "${PIPESTATUS[0]}" = 0 ] || status=1
        tar czf "$out/sm-target-runs.tgz" -C /tmp sm-target/told 2>/dev/null
        ;;
    sm-memory)
        bash bench/sm_target.sh "$build" /tmp/sm-target memory 2>&1 | tee "$out/sm_memory.md"
        [ "${PIPESTATUS[0]}" = 0 ] || status=1
        tar czf "$out/sm-memory-runs.tgz" -C /tmp sm-target/memory 2>/dev/null
        ;;
    sanitize)
        # compute-sanitizer's memcheck (out-of-bounds and misaligned accesses, leaks of device memory)
        # and racecheck (shared-memory hazards) over the kernels' own GPU tests (SANITIZE_TESTS);
        # each run's whole output in $out/sanitize-<tool>-<test>.log, its summary line here.
        sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
        for t in ${SANITIZE_TESTS:-gpu_layers gpu_pool gpu_loss gpu_optim gpu_batchnorm gpu_dlrm gpu_cait gpu_bf16 gpu_bf16_cait gpu_bf16_efficientnet gpu_conv_engine}; do
            [ -x "$build/$t" ] || { echo "$t: not built"; status=1; continue; }
            for tool in memcheck racecheck; do
                extra=$([ $tool = memcheck ] && echo "--leak-check full")
                log="$out/sanitize-$tool-$t.log"
                # shellcheck disable=SC2086
                timeout "${SANITIZE_TIMEOUT:-1800}" "$sanitizer" --tool $tool $extra --error-exitcode 99 \
                    "$build/$t" >"$log" 2>&1
                rc=$?
                echo "$t $tool: exit $rc, $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -1)"
                [ $rc = 0 ] || { status=1; grep -E "^=+ +(Invalid|Race|Error|Leaked|Program hit)" "$log" | sort | uniq -c | head -10; }
            done
        done
        # one file back instead of two a test (the tool returns at most eight)
        tar czf "$out/sanitize-logs.tgz" -C "$out" $(cd "$out" && ls sanitize-*.log 2>/dev/null) && rm -f "$out"/sanitize-*.log
        ;;
    parity-committed)
        # the parity tests on the references committed in tests/parity/reference/ (what ctest -L gpu
        # runs by default): float32 and bf16 for the vision models, float32 for the recommender
        for t in gpu_model_parity gpu_dlrm_parity; do
            "$build/$t" >"$out/$t.log" 2>&1 || status=1
            grep -vE "^\[ +(RUN|OK) +\]" "$out/$t.log" | head -60
        done
        ;;
    trace-cost)
        bash bench/trace_cost.sh "$build" "$out/trace_cost" "${TRACE_SIZES:-S M L}" "${TRACE_REPEATS:-3}" \
            "${TRACE_WINDOW_S:-5}" >"$out/trace_cost.txt" 2>&1 || status=1
        cat "$out/trace_cost.txt"
        ;;
    main-job)
        # README's main job as its first command runs it (the excerpt README shows comes from here)
        "$build/run_suite" --mode mps --mix S+S+M --quick --results /tmp/main-job 2>&1 | tee "$out/main_job.txt"
        [ "${PIPESTATUS[0]}" = 0 ] || status=1
        ;;
    advise-law)
        # issue 51: whether a job's rate between its two probes follows the advisor's law
        # (1/rate = a + b/s): LAW_MIX (S+M+M) advised with --probes all, then with the default two
        # probes a job (which finds them cached and runs nothing); each candidate's per-job progress
        # from both side by side, the law's against every size measured
        law=/tmp/advise-law
        rm -rf $law && mkdir -p $law
        for setting in all two; do
            "$build/run_suite" advise --mix "${LAW_MIX:-S+M+M}" --probes $setting --window "${ADVISE_WINDOW:-2}" \
                --warmup-steps "${ADVISE_WARMUP:-20}" --json --results $law/runs >"$out/advise_law_$setting.json" \
                2>"$law/$setting.log" || { echo "advise --probes $setting: exit $?"; tail -5 "$law/$setting.log"; status=1; }
        done
        python3 - "$out/advise_law_all.json" "$out/advise_law_two.json" <<'PY' | tee "$out/advise_law.md"
import json, sys
every, two = (json.load(open(p))["predictions"] for p in sys.argv[1:3])
print("| candidate | job | SMs | progress, every size probed | progress, two probes | off the law | difference |")
print("|---|---|---|---|---|---|---|")
by_label = {b["label"]: b for b in two}  # ranked apart: matched by candidate
for a in every:
    b = by_label.get(a["label"], {"jobs": []})
    for ja, jb in zip(a["jobs"], b["jobs"]):
        pa, pb = ja.get("progress"), jb.get("progress")
        diff = f"{(pb - pa) / pa * 100:+.1f}%" if pa and pb else "-"
        print(f"| {a['label']} | {ja['label']} | {ja.get('sms', '-')} | {pa} | {pb} | {jb.get('read_off_law', '-')} | {diff} |")
PY
        ;;
    attribution)
        # issue 49: each mix of ATTR_MIXES under --mode all with every kernel traced after the measured
        # windows, and its report; only the small files come back, in one tgz (a call returns few files
        # and none over its size limit: the traced files stay on the device)
        attribute() { # mix gpu
            local mix=$1 name d run
            name=$(echo "$mix" | tr '*+' 'x_')
            d=/tmp/attribution/$name
            rm -rf "$d" && mkdir -p "$d"
            # shellcheck disable=SC2086
            timeout "${ATTR_TIMEOUT:-200}" "$build/run_suite" --mode all --mix "$mix" --quick --window "${ATTR_WINDOW:-1}" \
                --gpu "$2" --kernels --kernels-window "${ATTR_KERNELS_WINDOW:-0.5}" --results "$d" \
                ${ATTR_OPTIONS:---mig-emulate} >"$d/run_suite.log" 2>&1 || echo "$mix: run_suite exited $?"
            run=$(find "$d" -mindepth 1 -maxdepth 1 -type d | head -1)
            [ -n "$run" ] && "$build/run_suite" report "$run" >"$d/report.log" 2>&1 || echo "$mix: no report ($(tail -1 "$d/report.log" 2>/dev/null))"
            echo "--- $mix (GPU $2)"; grep -E "^(mode|serial|naive|mps|mig-emulate|streams|green) " "$d/run_suite.log" | head -8
        }
        # one mix a GPU at once where the machine has several (their figures are each mix's own);
        # ATTR_GPUS="1 2": only these (NVML's indices, as run_suite --gpu takes them)
        read -r -a cards <<<"${ATTR_GPUS:-$(nvidia-smi --query-gpu=index --format=csv,noheader | tr '\n' ' ')}"
        [ ${#cards[@]} -gt 0 ] || cards=(0)
        k=0
        for mix in ${ATTR_MIXES:-S+M+M 7*S 3*M L+XL}; do
            attribute "$mix" "${cards[$((k % ${#cards[@]}))]}" >"/tmp/attribution-$k.log" 2>&1 &
            k=$((k + 1))
            if [ $((k % ${#cards[@]})) = 0 ]; then wait; fi
        done
        wait
        for ((i = 0; i < k; i++)); do cat "/tmp/attribution-$i.log"; done
        grep -q "exited\|no report" /tmp/attribution-*.log && status=1
        rm -f /tmp/attribution-*.log
        (cd /tmp && find attribution -type f \( -name kernels.csv -o -name interference.csv -o -name comparison.json \
            -o -name summary.json -o -name report.html -o -name '*.log' -o -name 'conv-choices.tsv' \) -size -3M |
            tar czf "$out/attribution.tgz" -T -)
        ls -la "$out/attribution.tgz"
        ;;
    trace-check)
        precision=${TRACE_PRECISION:-tf32}
        args=(--model resnet26 --image-size 32 --batch 128 --classes 10 --precision "$precision")
        median=$("$build/bench_step" "${args[@]}" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["median_ms"])')
        "$build/train" "${args[@]}" --data synthetic --epochs 2 --steps-per-epoch 200 --kernels "$out/trace_check" \
            >"$out/trace_check_train.log" 2>&1 || { tail -5 "$out/trace_check_train.log"; status=1; }
        log="$out/ncu_trace_check.csv"
        ncu --profile-from-start off --clock-control none --cache-control none --metrics gpu__time_duration.sum \
            --csv --page raw "$build/bench_step" "${args[@]}" --steps 5 --warmup 5 --profile >"$log" 2>&1 || status=1
        echo "--- resnet26 32x32/128 $precision: traced in place against ncu (bench_step median $median ms)"
        python3 bench/trace_check.py "$out/trace_check.kernels.csv" "$log" --step-ms "$median" || status=1
        ;;
    conv-bn-probe)
        # one process a type, so that each type's table is whole even if the call runs out of time
        for type in bf16 half; do
            # shellcheck disable=SC2086
            "$build/conv_bn_probe" ${PROBE_ARGS:---type $type --wgrad} 2>&1 | tee "$out/conv_bn_probe_$type.txt"
            [ "${PIPESTATUS[0]}" = 0 ] || status=1
            [ -z "${PROBE_ARGS:-}" ] || break
        done
        ;;
    conv-bn-probe-all)
        # shellcheck disable=SC2086
        "$build/conv_bn_probe" ${PROBE_ARGS:---type half --shapes all --wgrad} 2>&1 | tee "$out/conv_bn_probe_all.txt"
        [ "${PIPESTATUS[0]}" = 0 ] || status=1
        ;;
    cudnn-part)
        bash bench/cudnn_parts.sh keep .cudnn927 /tmp/cudnn927-parts || status=1
        ;;
    conv-bn-probe-927)
        lib=$(bash bench/cudnn_parts.sh assemble .cudnn927 /tmp/cudnn927-parts /tmp/cudnn927) || { status=1; continue; }
        # NVRTC for the runtime-compiled engines: the wheel's libraries look for it beside pip's layout
        nvrtc=$(bash bench/cudnn_parts.sh nvrtc) || echo "libnvrtc.so.13 not found: runtime fusion will be refused"
        path="$lib${nvrtc:+:$nvrtc}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
        echo "--- conv_bn_probe --libraries-only with LD_LIBRARY_PATH=$path"
        LD_LIBRARY_PATH=$path "$build/conv_bn_probe" --libraries-only 2>&1 | tee "$out/conv_bn_probe_927_libraries.txt"
        if [ -n "${CUDNN927_SUBSET:-}" ]; then
            sub=/tmp/cudnn927-subset; rm -rf $sub; mkdir -p $sub
            for name in cudnn $CUDNN927_SUBSET; do ln -s "$lib/lib$name.so.9" $sub/; done
            echo "--- the same with only: cudnn $CUDNN927_SUBSET"
            LD_LIBRARY_PATH=$sub${nvrtc:+:$nvrtc} "$build/conv_bn_probe" --libraries-only 2>&1 |
                tee "$out/conv_bn_probe_927_subset.txt"
        fi
        echo "--- conv_bn_probe on cuDNN from $lib"
        # shellcheck disable=SC2086
        LD_LIBRARY_PATH=$path "$build/conv_bn_probe" ${PROBE_ARGS:---type both --wgrad} 2>&1 |
            tee "$out/conv_bn_probe_927.txt"
        [ "${PIPESTATUS[0]}" = 0 ] || status=1
        ;;
    gemm-bn-cutlass)
        [ -x "$build/gemm_bn_cutlass" ] || { echo "gemm_bn_cutlass: not built (carry third_party/cutlass.tgz, run build)"; status=1; continue; }
        # shellcheck disable=SC2086
        "$build/gemm_bn_cutlass" ${CUTLASS_ARGS:-} 2>&1 | tee "$out/gemm_bn_cutlass.txt"
        [ "${PIPESTATUS[0]}" = 0 ] || status=1
        ;;
    *) echo "unknown stage '$stage'" >&2; exit 2 ;;
    esac
done
exit $status
