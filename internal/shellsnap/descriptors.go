package shellsnap

import "strings"

// A startup file can leave a descriptor open (`exec 3>>~/.log`, `exec
// {BASH_XTRACEFD}>>~/trace`), which a login shell's script can write to. It
// is an open file of the profile's process: a replay cannot have it (reopening
// the path could truncate, create or block on a FIFO), so a capture names the
// descriptors the startup files left open, and the receipt says partial with
// {descriptor, N} for each (docs/FIDELITY.md). Each capture lists the
// descriptors from 3 up open before the startup files run (after it kept its
// own stdout) and again once it has its stdout back; an fds record holds those
// open after and not before. The listings test each descriptor's
// /proc/self/fd entry: no glob (whose options the profile sets) and no
// child (whose pipe would be open too). bash lists up to its table's size
// (FDSize), since `{name}>` opens one from 10 up; zsh and dash 3 to 9, since
// their own descriptors (zsh's mapped .zwc files, dash's sourced files) are
// from 10 up.

// bashFDSize sets __snapexec_i to the size of bash's descriptor table, the
// bound of its listings (FDSize in /proc/self/status), or empty.
const bashFDSize = `while IFS=$' \t' \command read -r __snapexec_f __snapexec_i; do if [[ $__snapexec_f == FDSize: ]]; then break; fi; __snapexec_i=; done </proc/self/status
`

// bashFdsBefore lists, before the startup files, what bashFdsRecord
// compares with: " 3 10 " in __snapexec_fds0.
const bashFdsBefore = `__snapexec_fds0=' '
` + bashFDSize + `for ((__snapexec_f = 3; __snapexec_f < ${__snapexec_i:-0}; __snapexec_f++)); do if [[ -e /proc/self/fd/$__snapexec_f ]]; then __snapexec_fds0+="$__snapexec_f "; fi; done
`

// bashFdsRecord prints the fds record of a capture that ran bashFdsBefore.
const bashFdsRecord = `if [[ -n ${__snapexec_fds0-} ]]; then
  \command printf '%s fds\n' "$__snapexec_n"
  ` + bashFDSize + `  for ((__snapexec_f = 3; __snapexec_f < ${__snapexec_i:-0}; __snapexec_f++)); do
    if [[ -e /proc/self/fd/$__snapexec_f && $__snapexec_fds0 != *" $__snapexec_f "* ]]; then \command printf '%s\n' "$__snapexec_f"; fi
  done
  \command printf '\n'
fi
`

// zshFdsBefore is bashFdsBefore for zsh.
const zshFdsBefore = `__snapexec_fds0=' '
for __snapexec_f in 3 4 5 6 7 8 9; do if [[ -e /proc/self/fd/$__snapexec_f ]]; then __snapexec_fds0+="$__snapexec_f "; fi; done
`

// zshFdsRecord is bashFdsRecord for zsh, run under emulate -R zsh.
const zshFdsRecord = `if (( ${+__snapexec_fds0} )); then
  \builtin print -r -- "$__snapexec_n fds"
  for __snapexec_f in 3 4 5 6 7 8 9; do
    if [[ -e /proc/self/fd/$__snapexec_f && $__snapexec_fds0 != *" $__snapexec_f "* ]]; then \builtin print -r -- $__snapexec_f; fi
  done
  \builtin print
fi
`

// shFdsBefore is bashFdsBefore for dash.
const shFdsBefore = `__snapexec_fds0=' '
for __snapexec_f in 3 4 5 6 7 8 9; do if command test -e /proc/self/fd/$__snapexec_f; then __snapexec_fds0="$__snapexec_fds0$__snapexec_f "; fi; done
`

// shFdsRecord is bashFdsRecord for dash.
const shFdsRecord = `command printf '%s fds\n' "$__snapexec_n"
for __snapexec_f in 3 4 5 6 7 8 9; do
  if command test -e /proc/self/fd/$__snapexec_f; then case $__snapexec_fds0 in *" $__snapexec_f "*) ;; *) command printf '%s\n' "$__snapexec_f" ;; esac; fi
done
command printf '\n'
`

// descriptorPieces names the descriptors of recs' fds record as unrestored.
func descriptorPieces(recs []record) []Piece {
	var pieces []Piece
	for _, r := range recs {
		if r.kind == "fds" {
			for _, fd := range strings.Fields(r.payload) {
				pieces = append(pieces, Piece{Kind: "descriptor", Name: fd})
			}
		}
	}
	return pieces
}
