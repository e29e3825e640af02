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

// RichZshProfile is RichProfile's zsh twin: exports, a path prefix,
// functions, aliases of every kind, arrays, an association, integer,
// read-only and unexported parameters, options on and off, a umask, a
// zshexit hook (which runs at the shell's end, unless a program ran in its
// place), and a last word for $_.
const RichZshProfile = `export EDITOR=vim
export PROJECT_ROOT="$HOME/src"
path=("$HOME/bin" $path)
unset DROP_ME
greet() { echo "hello $1"; }
typeset -a ARR=(one 'two words' three)
typeset -A MAP=(k v 'a b' c)
typeset -i COUNT=3
typeset -r LOCKED=1
shell_only=v
alias ll='ls -l'
alias -g G='| grep'
alias -s txt=cat
setopt pipefail noclobber extendedglob
unsetopt nomatch
umask 027
zshexit() { echo bye; }
: last-word
`

// ZshFidelityProbe prints the state a zsh command sees, one fact a line,
// in one line of script (a zsh standby serves no other).
const ZshFidelityProbe = `echo "u=$_ status=$?"; env | LC_ALL=C sort; echo "--- functions"; print -rl -- ${(ok)functions}; echo "--- aliases"; print -rl -- ${(okv)aliases} ${(okv)galiases} ${(okv)saliases}; echo "--- options"; print -rl -- ${(ok)options[(R)on]}; echo "--- params"; typeset -p ARR MAP COUNT LOCKED shell_only 2>&1; echo "--- umask"; umask; echo "--- misc"; echo "zero=$0 args=$# lineno=$LINENO tens=${SECONDS%?} sub=$ZSH_SUBSHELL"; print -r -- "$ZSH_EXECUTION_STRING"; pwd; print -rl -- /proc/$$/fd/*(:t)`
