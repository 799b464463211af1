#!/usr/bin/env bash
# Put bubblewrap (bwrap), the sandbox of solution processes, where the harness finds it:
# .tools/bubblewrap/usr/bin/bwrap in the repository (git-ignored), unpacked from the Debian package
# with `apt-get download` + `dpkg -x`, so no root install is needed.
# Does nothing when `bwrap` is on PATH or .tools/bubblewrap/usr/bin/bwrap already runs.
# Never fails: without bwrap, evaluations still run and their reports say `sandbox: none`.
set -u
case "${1:-}" in
  -h|--help) echo "usage: bash scripts/install_bwrap.sh   (no arguments; run by make)"; exit 0 ;;
esac

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="$root/.tools/bubblewrap"
local_bwrap="$dest/usr/bin/bwrap"

if command -v bwrap >/dev/null 2>&1; then
    exit 0
fi
if [ -x "$local_bwrap" ] && "$local_bwrap" --version >/dev/null 2>&1; then
    exit 0
fi

warn() {
    echo "install_bwrap: warning: could not install bubblewrap ($1); evaluations will report \`sandbox: none\`" >&2
    exit 0
}

command -v apt-get >/dev/null 2>&1 || warn "no apt-get on this machine"
command -v dpkg >/dev/null 2>&1 || warn "no dpkg on this machine"

work="$(mktemp -d 2>/dev/null)" || warn "mktemp failed"
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"  # apt's download user (_apt) must be able to write there

if ! (cd "$work" && apt-get download bubblewrap) >"$work/log" 2>&1; then
    why="$(grep -m1 -E '^E:' "$work/log" || tail -n1 "$work/log")"
    warn "apt-get download bubblewrap failed${why:+: $why}"
fi
deb="$(ls "$work"/bubblewrap_*.deb 2>/dev/null | head -n1)"
[ -n "$deb" ] || warn "apt-get download left no package"

mkdir -p "$root/.tools" || warn "cannot create $root/.tools"
staging="$root/.tools/.bubblewrap.$$"
rm -rf "$staging"
dpkg -x "$deb" "$staging" >>"$work/log" 2>&1 || { rm -rf "$staging"; warn "dpkg -x failed"; }
version="$("$staging/usr/bin/bwrap" --version 2>&1)" || { rm -rf "$staging"; warn "the unpacked bwrap does not run: $version"; }
rm -rf "$dest"
mv "$staging" "$dest" || { rm -rf "$staging"; warn "cannot move it to $dest"; }
echo "install_bwrap: $version installed in .tools/bubblewrap"
