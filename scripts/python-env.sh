# Sourced by the test scripts: puts the project's Python tools on PATH from .venv/ (git-ignored),
# a virtual environment of the repository's own, never the machine's Python. It is (re)made
# from scripts/python-requirements.txt, exact versions, whenever that file has changed since
# it was last made. Installs Debian's python3 and python3-venv first when they are missing.
#
#   . scripts/python-env.sh        # from the repository root; then schemathesis, python, … are .venv's

kidledger_python_env() {
    local repo venv req stamp want
    repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    venv=$repo/.venv
    req=$repo/scripts/python-requirements.txt
    stamp=$venv/.requirements.sha256
    want=$(sha256sum "$req" | cut -d' ' -f1)
    if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
        echo "installing the Python test tools into .venv/ (scripts/python-requirements.txt)"
        rm -rf "$venv"
        # Debian's python3 makes virtual environments only with python3-venv (ensurepip).
        if ! command -v python3 >/dev/null 2>&1 || ! python3 -m venv "$venv" >/dev/null 2>&1; then
            echo "installing python3 and python3-venv"
            rm -rf "$venv"
            { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-venv >/dev/null; } || return 1
            python3 -m venv "$venv" || return 1
        fi
        "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-input -r "$req" || return 1
        echo "$want" >"$stamp"
    fi
    export PATH="$venv/bin:$PATH"
    export VIRTUAL_ENV="$venv"
}
kidledger_python_env
