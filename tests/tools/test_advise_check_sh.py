#!/usr/bin/env python3
"""tools/advise_check.sh run whole on the CPU: tests/support/fake_train.c as every job, the fake job
host, a fake MPS control program and the NVML stand-in as two H100s.

Four small mixes (two fit, two held out) over ADVISE_GPUS="0 1": each mix's check runs on one GPU
while another mix's runs on the other, the fit waits for both fit mixes, the held-out mixes read
its constants, and the score is written. What two advisors at once must not do is checked: each
mix's folder links to its own advice (not to the other lane's, made at the same time), and the
shared probe cache holds every probe any mix ran. A call again skips every mix (resumable); a bad
ADVISE_GPUS or mix table is refused (exit 2, naming it) before anything runs.
  test_advise_check_sh.py --build BUILD --fake-train P --fake-job-host P --nvml-standin P"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))  # testlib
from testlib import run_in_folders

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECK_SH = os.path.join(ROOT, "tools", "advise_check.sh")
TABLE = "2S|2*S|tf32|fit\nSM|S+M|tf32|fit\n3S|3*S|tf32|held-out\nMS|M+S|tf32|held-out\n"


def env_of(tmp, args):
    bin_dir, mps = os.path.join(tmp, "bin"), os.path.join(tmp, "mps")
    os.makedirs(bin_dir, exist_ok=True)
    os.makedirs(mps, mode=0o700, exist_ok=True)
    os.symlink(args.fake_train, os.path.join(bin_dir, "nvidia-cuda-mps-control"))
    table = os.path.join(tmp, "mixes.txt")
    with open(table, "w", encoding="utf-8") as f:
        f.write(TABLE)
    env = dict(os.environ)
    env.update(PATH=bin_dir + os.pathsep + env.get("PATH", "/usr/bin:/bin"), CUDA_MPS_PIPE_DIRECTORY=mps,
               SUITE_NVML_LIBRARY=args.nvml_standin, SUITE_NVML_STANDIN_GPU="H100-80GB",
               SUITE_NVML_STANDIN_MIG="off", SUITE_NVML_STANDIN_GPUS="2", SUITE_NVML_STANDIN_POWER_W="250",
               SUITE_JOB_HOST=args.fake_job_host,
               # jobs that lose speed on fewer SMs and beside others (test_advise_check's fakes)
               FAKE_TRAIN="resnet26:epoch_ms=200,steps=10,setup_ms=5,share_speed=50,crowd_slow=100;"
                          "resnet50:epoch_ms=200,steps=10,setup_ms=5,share_speed=0,crowd_slow=50",
               ADVISE_MIX_TABLE=table, ADVISE_GPUS="0 1", ADVISE_WINDOW="0.3", ADVISE_WARMUP="2",
               ADVISE_ARGS=f"--train {args.fake_train}", ADVISE_CHECK_ARGS="--check-top 2",
               ADVISE_MODE_ALL_MIXES="none")
    return env


def test_two_lanes(tmp, args):
    env, out = env_of(tmp, args), os.path.join(tmp, "out")
    p = subprocess.run(["bash", CHECK_SH, args.build, out], capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    text = p.stdout
    for name, mix in (("2S", "2*S"), ("SM", "S+M"), ("3S", "3*S"), ("MS", "M+S")):
        # its lines, printed when it ended, say the GPU it ran on
        assert f"--- {name}: {mix} in tf32 on GPU " in text, text
        links = glob.glob(os.path.join(out, name, "*-advise-*"))
        assert len(links) == 1 and os.path.islink(links[0]), links
        advice = json.load(open(os.path.join(links[0], "advice.json")))
        assert advice["mix"] == mix, (name, advice["mix"])  # its own advice, not the other lane's
        assert os.path.exists(os.path.join(links[0], "check.json")), links[0]
    # both GPUs were used
    gpus = {line.rsplit(" ", 1)[1] for line in text.splitlines() if " in tf32 on GPU " in line}
    assert gpus == {"0", "1"}, gpus
    # the fit came after both fit mixes, and the held-out mixes after it
    assert text.index("--- fit on ") > max(text.index("--- 2S:"), text.index("--- SM:")), text
    assert text.index("--- fit on ") < min(text.index("--- 3S:"), text.index("--- MS:")), text
    constants = json.load(open(os.path.join(out, "advise-constants.json")))
    assert "switch_cost" in constants, constants
    held_out = json.load(open(glob.glob(os.path.join(out, "3S", "*-advise-*", "advice.json"))[0]))
    assert "advise-constants.json" in held_out["constants_source"], held_out["constants_source"]
    assert os.path.exists(os.path.join(out, "score.json"))
    # every probe any mix listed is in the one cache both lanes saved into
    cache = json.load(open(os.path.join(out, "advise-cache.json")))["probes"]
    for advice_path in glob.glob(os.path.join(out, "*", "*-advise-*", "advice.json")):
        for probe in json.load(open(advice_path))["probes"]:
            assert probe["key"] in cache, (advice_path, probe["key"], sorted(cache))
    assert not glob.glob(os.path.join(out, ".lane-*")), os.listdir(out)  # each lane's lines printed, then gone

    # resumable: a second call finds every check done
    p = subprocess.run(["bash", CHECK_SH, args.build, out], capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.count("done before, skipped") == 4, p.stdout


def test_bad_input(tmp, args):
    """Each refused with exit 2, naming the input and what was expected, before anything runs."""
    out = os.path.join(tmp, "out")
    for key, value, said in (("ADVISE_GPUS", "0 one", 'ADVISE_GPUS: "one" is not a GPU index'),
                             ("ADVISE_GPUS", "1 0 1", "ADVISE_GPUS: GPU 1 is named twice"),
                             ("table", "2S|2*S|tf32|fit\nSM|S+M|tf32|train\n", '"SM|S+M|tf32|train": expected'),
                             ("table", "2S|2*S|tf32\n", '"2S|2*S|tf32|": expected'),
                             ("table", "a b|2*S|tf32|fit\n", '"a b|2*S|tf32|fit": expected')):
        env = env_of(tmp, args)
        if key == "table":
            with open(env["ADVISE_MIX_TABLE"], "w", encoding="utf-8") as f:
                f.write(value)
        else:
            env[key] = value
        p = subprocess.run(["bash", CHECK_SH, args.build, out], capture_output=True, text=True, env=env)
        assert p.returncode == 2 and said in p.stderr, (value, p.stdout + p.stderr)
        assert not os.path.exists(out), os.listdir(out)
        shutil.rmtree(os.path.join(tmp, "bin"))  # env_of makes it again


def main():
    p = argparse.ArgumentParser()
    for option in ("--build", "--fake-train", "--fake-job-host", "--nvml-standin"):
        p.add_argument(option, required=True)
    args = p.parse_args()
    return run_in_folders([(t.__name__, lambda tmp, t=t: t(tmp, args)) for t in (test_bad_input, test_two_lanes)],
                          "advise-check-sh-")

if __name__ == "__main__":
    sys.exit(main())
