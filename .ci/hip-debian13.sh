#!/usr/bin/env bash
# Compiles the HIP kernels for gfx90a, gfx940 and gfx942 (MI300X/MI325X) with Debian 13's hipcc 5.7
# (LLVM 17) in a chroot, since Debian 12's hipcc 5.2 cannot target gfx942. Compile only: CI has no
# AMD GPU. The chroot (about 1 GB, 3-4 minutes to make, mostly download) is kept in ROOT and reused.
# Usage: bash .ci/hip-debian13.sh [ROOT]     (default: build-hip13/root; needs root for chroot)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=${1:-$PWD/build-hip13/root}
ARCHS=(gfx90a gfx940 gfx942)

# The Debian mirror this machine's own apt uses, as apt itself reads its sources (deb822 or
# one-line files, whichever exist), so the chroot comes from wherever the machine gets its packages.
debian_mirror() {
  apt-get indextargets --format '$(REPO_URI)' 'Created-By: Packages' | grep -v -- '-security' | head -n 1 || true
}

if [ ! -x "$ROOT/usr/bin/hipcc" ]; then
  MIRROR=$(debian_mirror)
  [ -n "$MIRROR" ] || { echo "hip-debian13: no Debian mirror in this machine's apt configuration" >&2; exit 1; }
  apt-get install -y -qq --no-install-recommends mmdebstrap >/dev/null
  mkdir -p "$ROOT"
  mmdebstrap --quiet --variant=apt --include=hipcc,cmake,ninja-build trixie "$ROOT" "$MIRROR"
fi
rm -rf "$ROOT/src" "$ROOT/build"
mkdir -p "$ROOT/src"
git ls-files -z kernels cmake | xargs -0 tar -cf - | tar -xf - -C "$ROOT/src"
chroot "$ROOT" env HIP_PLATFORM=amd CXX=clang++-17 cmake -S /src/kernels -B /build -G Ninja -DVIDGRAPH_GPU=hip \
  "-DCMAKE_HIP_ARCHITECTURES=$(IFS=';'; echo "${ARCHS[*]}")" >/dev/null
chroot "$ROOT" env HIP_PLATFORM=amd cmake --build /build --parallel "$(nproc)"

# Every kernel object must carry a code object for every target (runtime.hip has no kernels).
status=0
for obj in "$ROOT"/build/hip/*.o; do
  case "$obj" in *runtime.hip.o) continue ;; esac
  for arch in "${ARCHS[@]}"; do
    if ! grep -aq "amdgcn-amd-amdhsa--$arch" "$obj"; then
      echo "$(basename "$obj") has no code object for $arch" >&2
      status=1
    fi
  done
done
[ $status -eq 0 ] && echo "HIP kernels built for ${ARCHS[*]} with $(chroot "$ROOT" env HIP_PLATFORM=amd hipcc --version | head -1)"
exit $status
