// Package shellsnaptest holds the profile and probe that the snapshot
// package's tests and the standby package's share: a replay, a standby and
// a real login shell must print the same for them.
package shellsnaptest

// RichProfile exercises what a real login profile does: exports, a PATH
// prefix, functions (one exported), aliases with expand_aliases, shopts, set
// options, a umask and an unset.
const RichProfile = `export EDITOR=vim
export PROJECT_ROOT="$HOME/src"
export PATH="$HOME/bin:$PATH"
unset DROP_ME
greet() { echo "hello $1"; }
exported_fn() { echo exported; }
export -f exported_fn
shopt -s expand_aliases extglob
alias ll='ls -l'
alias gs='git status'
set -o pipefail
set -o noclobber
umask 027
`

// FidelityProbe prints the state a command sees, one fact a line.
const FidelityProbe = `env | LC_ALL=C sort
echo "--- functions"; declare -F
echo "--- aliases"; alias -p
echo "--- set -o"; set -o | awk '$2=="on"{print $1}'
echo "--- shopt"; shopt -s
echo "--- umask"; umask
echo "--- exported function"; exported_fn
echo "--- alias use"; type -t ll`
