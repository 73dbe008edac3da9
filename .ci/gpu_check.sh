#!/usr/bin/env bash
# The device checks of a session lent a GPU (run through the workplace's device tool from the repository root):
# the gpu-marked tests (the Y/Z trainer's and the language model's), the device benchmarks (the Y/Z trainer, the
# language model), and Chapter 7's paper profile timed on the GPU.
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpu-out}; mkdir -p "$OUT"
nvidia-smi -L; python3 -c "import sys, torch; print(sys.version.split()[0], torch.__version__, torch.cuda.get_device_name(0))"
nproc
python3 -m pytest -q -p no:cacheprovider -p no:xdist -m gpu tests/test_device.py tests/test_lm_device.py -rA 2>&1 | tee "$OUT/gpu-tests.txt" | tail -15
python3 benchmarks/bench_device.py --device cuda --q 3 --sample 2 --threads "$(nproc)" 2>&1 | tee "$OUT/bench-device.txt"
# the LM at the vocabulary of ch8-freeze's paper data here (valid + test less every tenth article: 17722 words);
# the device machine has no WikiText-2 to read it from
python3 benchmarks/bench_lm.py --device cuda --vocab 17722 2>&1 | tee "$OUT/bench-lm.txt"
for dev in cuda cpu; do
  /usr/bin/time -f "fig-paper-6 paper profile on $dev: %e s wall" timeout 200 python3 -m scansnap reproduce fig-paper-6 \
    --profile paper --device $dev --out /tmp/ch7-$dev --quiet 2>&1 | tail -3 | tee -a "$OUT/paper-ch7.txt"
done
