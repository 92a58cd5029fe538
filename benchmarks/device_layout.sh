# Sourced by the device scripts (bench_bulk_device.sh, device_train.sh, device_sweep.sh), from
# the repo root on the device machine. It has torch/numba/numpy/scipy but no gymkit and no
# polars: polars comes in .whl/ (carried: the polars + polars-runtime-32 wheels, or both unpacked
# into one polars.tar.xz, 33 MB instead of 52, to fit the 64 MiB carry), gymkit is laid out as a
# package in /tmp/pkg (its package-dir mapping: gymkit.dsl = dsl/, ...), nothing is built.
if [ -d .whl ] && ! python3 -c "import polars" 2>/dev/null; then
  mkdir -p /tmp/site
  if [ -f .whl/polars.tar.xz ]; then tar xJf .whl/polars.tar.xz -C /tmp/site
  else python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  fi
fi
# TRL for `gymkit train rl --trainer trl` (the device has transformers, accelerate and pyarrow,
# not trl or datasets; its Python is 3.12): .whl/trl.tar.xz = trl, datasets, dill and fsspec
# from this machine's venv, and the cp312/py312 wheels of xxhash and multiprocess (pip download
# --python-version 3.12 --only-binary=:all:), each with its dist-info folder; the device's own
# huggingface_hub (a newer one there lacks httpcore2)
if [ -f .whl/trl.tar.xz ] && ! python3 -c "import trl" 2>/dev/null; then
  mkdir -p /tmp/site && tar xJf .whl/trl.tar.xz -C /tmp/site
fi
# every call: a warm machine must not run the previous call's code (copied over, so the
# __pycache__ folders, numba's cache among them, stay; numba keys it by the sources' digest)
mkdir -p /tmp/pkg/gymkit && cp -r gymkit/. /tmp/pkg/gymkit/
for d in dsl verifiers jepa data; do mkdir -p "/tmp/pkg/gymkit/$d" && cp -r "$d/." "/tmp/pkg/gymkit/$d/"; done
export PYTHONPATH=/tmp/pkg:/tmp/site${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
