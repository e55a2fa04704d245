#!/usr/bin/env bash
# scripts/pyenv.sh PYTHON VENV - make sure the virtual environment VENV exists and holds
# what the Python steps need that Debian does not package: highspy (HiGHS, the ILP
# blocking bound of tsync-rta) and tsync_rta itself (editable install of python/).
#
# The venv sees the system's site-packages (--system-site-packages), so matplotlib,
# numpy, PyYAML, tqdm and pytest come from apt (scripts/deps.sh); pip fetches only what
# is missing. A second run is instant. Prints the venv's interpreter on stdout. If the
# venv cannot be made or pip cannot reach the package index, prints PYTHON instead and a
# warning on stderr: every test still runs except the ILP ones, which then skip.
set -euo pipefail
py=${1:?usage: $0 PYTHON VENV}
venv=${2:?usage: $0 PYTHON VENV}
root=$(cd "$(dirname "$0")/.." && pwd)

fallback() {
	echo "pyenv: $1; using $py (tsync-rta's ILP tests will be skipped)" >&2
	echo "$py"
	exit 0
}

if [ ! -x "$venv/bin/python" ]; then
	"$py" -m venv --system-site-packages "$venv" >&2 || fallback "cannot create $venv"
fi
vpy="$venv/bin/python"
if ! "$vpy" -c 'import highspy, tsync_rta' >/dev/null 2>&1; then
	echo "pyenv: installing highspy and python/ (tsync-rta) into $venv" >&2
	"$vpy" -m pip install -q --disable-pip-version-check -e "$root/python[ilp]" >&2 ||
		fallback "pip could not install highspy"
fi
echo "$vpy"
