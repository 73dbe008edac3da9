#!/usr/bin/env bash
# The device checks of a session lent a GPU (run through the workplace's device tool from the repository root):
# the gpu-marked tests (the Y/Z trainer's and the language model's), the device benchmarks (the Y/Z trainer, the
# language model), Chapter 8's Figure 10 at the paper's protocol on the GPU (when $SCANSNAP_WIKITEXT names a
# WikiText-2 folder carried along: the device machine has none) and Chapter 7's paper profile timed on the GPU.
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpu-out}; mkdir -p "$OUT"
nvidia-smi -L; python3 -c "import sys, torch; print(sys.version.split()[0], torch.__version__, torch.cuda.get_device_name(0))"
nproc
python3 -m pytest -q -p no:cacheprovider -p no:xdist -m gpu tests/test_device.py tests/test_lm_device.py -rA 2>&1 | tee "$OUT/gpu-tests.txt" | tail -15
if [ -n "${SCANSNAP_WIKITEXT:-}" ]; then
  # the whole ch8-rates protocol (5 rates x 3 seeds, each to convergence) on the GPU, one run at a time; its result
  # comes back for judging against the stored CPU runs (stores/ch8-rates/paper)
  /usr/bin/time -f "fig-paper-10 paper profile on cuda: %e s wall" timeout 300 python3 -m scansnap reproduce \
    fig-paper-10 --profile paper --device cuda --out /tmp/f10 --quiet 2>&1 | tail -3 | tee "$OUT/paper-ch8.txt"
  mkdir -p "$OUT/f10" && cp /tmp/f10/results/ch8-rates.npz /tmp/f10/figures/fig-paper-10.{png,json} "$OUT/f10/"
fi
python3 benchmarks/bench_device.py --device cuda --q 3 --sample 2 --threads "$(nproc)" 2>&1 | tee "$OUT/bench-device.txt"
# the LM at the vocabulary of ch8-freeze's paper data here (valid + test less every tenth article: 17722 words);
# the device machine has no WikiText-2 to read it from
python3 benchmarks/bench_lm.py --device cuda --vocab 17722 2>&1 | tee "$OUT/bench-lm.txt"
for dev in cuda cpu; do
  /usr/bin/time -f "fig-paper-6 paper profile on $dev: %e s wall" timeout 200 python3 -m scansnap reproduce fig-paper-6 \
    --profile paper --device $dev --out /tmp/ch7-$dev --quiet 2>&1 | tail -3 | tee -a "$OUT/paper-ch7.txt"
done
