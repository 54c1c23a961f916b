#!/usr/bin/env bash
# On the GPU machine (no network), SOURCE it from the repository root once every part of
# .whl/peers has been copied into one folder (default /tmp/peers-parts; benchs/PEERS.md):
#     source benchs/peers/install_peers.sh [PARTS_FOLDER]
# It joins the parts, checks their SHA-256, installs the wheels without their
# dependencies (the machine's numpy, cupy, cuda-bindings and nvidia-* packages serve)
# under /tmp/peers-site (nvJitLink 13.3+ apart, under /tmp/peers-jitlink, so that the
# machine's own nvidia packages stay as they are), exports PYTHONPATH and
# LD_LIBRARY_PATH, and checks that FAISS and cuVS import. Sourced again on the same
# machine it only exports the variables. Returns 1 if something is wrong.
_peers_install() {
  local parts=${1:-/tmp/peers-parts} site=/tmp/peers-site jit=/tmp/peers-jitlink wheels=/tmp/peers-wheels
  local sum="" n have nvlibs rapids jitlib
  if [ -f "$parts/peers.sha256" ]; then
    sum=$(head -n1 "$parts/peers.sha256" | cut -d' ' -f1)
  fi
  if [ -n "$sum" ] && [ "$(cat "$site/.installed" 2>/dev/null)" = "$sum" ]; then
    echo "install_peers: already installed under $site"
  else
    if [ -z "$sum" ] || ! ls "$parts"/peers.tar.[0-9]* >/dev/null 2>&1; then
      echo "install_peers: no peers.sha256 / peers.tar.NN in $parts (copy every .whl/peers/part-NN there first)"
      return 1
    fi
    n=$(sed -n 2p "$parts/peers.sha256" | cut -d' ' -f1)
    have=$(ls "$parts"/peers.tar.[0-9]* | wc -l)
    if [ "$have" != "$n" ]; then echo "install_peers: $have of $n parts in $parts"; return 1; fi
    cat "$parts"/peers.tar.[0-9]* > /tmp/peers.tar
    if [ "$(sha256sum /tmp/peers.tar | cut -d' ' -f1)" != "$sum" ]; then
      echo "install_peers: the joined parts do not match their SHA-256"; rm -f /tmp/peers.tar; return 1
    fi
    rm -rf "$wheels" "$site" "$jit" && mkdir -p "$wheels"
    tar -xf /tmp/peers.tar -C "$wheels" && rm /tmp/peers.tar || return 1
    export PIP_ROOT_USER_ACTION=ignore
    python3 -m pip install -q --no-index --no-deps --no-compile --target "$jit" \
        "$wheels"/nvidia_nvjitlink-*.whl || return 1
    python3 -m pip install -q --no-index --no-deps --no-compile --target "$site" \
        $(ls "$wheels"/*.whl | grep -v nvidia_nvjitlink) || return 1
    echo "$sum" > "$site/.installed"
    rm -rf "$wheels"
  fi
  case ":${PYTHONPATH:-}:" in *":$site:"*) ;; *) export PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH} ;; esac
  nvlibs=$(python3 -c "import nvidia,os;p=nvidia.__path__[0];print(':'.join(os.path.join(p,d,'lib') for d in sorted(os.listdir(p))))" 2>/dev/null)
  rapids=$(ls -d "$site"/*/lib64 "$site"/*.libs 2>/dev/null | tr '\n' ':')
  jitlib=$(dirname "$(ls "$jit"/nvidia/*/lib/libnvJitLink.so* | head -n1)")
  export LD_LIBRARY_PATH=$jitlib:${rapids}${nvlibs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  python3 - <<'PY' || return 1
import libcuvs
libcuvs.load_library()
import cuvs
from cuvs.neighbors import brute_force, cagra, ivf_flat  # noqa: F401
import faiss
print(f"install_peers: cuVS {cuvs.__version__} and FAISS {faiss.__version__} "
      f"({faiss.get_num_gpus()} GPU) load")
PY
}
_peers_install "$@"
