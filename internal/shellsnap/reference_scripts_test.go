package shellsnap

import "strings"

// The reference's capture scripts, which this server no longer runs (it
// captures with script_bash.go, script_zsh.go and script_sh.go): the tests
// that build a snapshot of the reference's format, as a fake capture gives
// one, run them in a real shell.

// exportMarker is the line at which the reference cuts its snapshot script: the
// exports come from /usr/bin/env -0 instead, so that Parse can apply the
// environment policy to them.
const exportMarker = "# Capture exported variables"

// CaptureScript returns the script that a login shell named shell ("bash", "zsh"
// or "sh") runs to capture its state, and false for any other name.
//
// As in the reference (SHELL-SNAPSHOTS.md section 4.2), the script sources the
// interactive rc file, prints the restorable state from the line "# Snapshot file"
// on, then one NUL byte, then the final environment as /usr/bin/env -0 prints it.
// The state differs from the reference's where that makes a replay closer to a
// real login shell:
//
//   - Every shell's umask is captured, and zsh's fpath, without which the
//     autoload stubs that "functions" prints cannot load.
//   - Aliases are saved before the capture removes them, and restored for bash
//     and sh too (the reference executes "unalias -a" first, so it never
//     restores a bash alias). The state still starts with "unalias -a", so the
//     function definitions are read while no alias can rewrite them.
//   - Bash's enabled shopt options are restored, before the functions, because
//     extglob changes how a function body parses.
//   - The set -o (setopt) options come last, after the functions and aliases, so
//     errexit, nounset, noclobber, posix, verbose and xtrace act on the user's
//     command only, never on the restore. verbose and xtrace share the very last
//     line, so neither echoes the other.
//   - The capture uses only builtins: a profile's grep, awk or sed function cannot
//     break it, and no temporary file is needed. It turns errexit and nounset off
//     once it has recorded them, so that the profile's options cannot abort it.
func CaptureScript(shell string) (string, bool) {
	var script string
	switch shell {
	case "bash":
		script = bashSnapshotScript
	case "zsh":
		script = zshSnapshotScript
	case "sh":
		script = shSnapshotScript
	default:
		return "", false
	}
	state, _, _ := strings.Cut(script, exportMarker)
	return state + "printf '\\0'\n/usr/bin/env -0\n", true
}

// bashSnapshotScript prints the bash state. It never restores these set -o
// options:
//
//   - history: with histexpand, a non-interactive shell would expand every "!"
//     of the user's script as a history event ("event not found");
//   - monitor: job control puts each background job in its own process group,
//     out of reach of the executor's group kill, and complains without a tty;
//   - privileged: the replay runs bash -p to skip BASH_ENV and turns it off at
//     once, which a restored privileged would undo;
//   - onecmd and noexec: the shell would exit after one command, or run none.
//
// The shopt options login_shell and restricted_shell are read-only; setting them
// fails or is ignored, so they are not restored either. BASHOPTS and SHELLOPTS are
// read rather than shopt and set -o, so that no output has to be parsed.
const bashSnapshotScript = `if [[ -z "${BASH_ENV:-}" && -r "${HOME:-}/.bashrc" ]]; then
  . "${HOME:-}/.bashrc"
fi
__codex_aliases=$(\builtin alias -p)
__codex_alias_count=${#BASH_ALIASES[@]}
\builtin unalias -a
__codex_setopts=$SHELLOPTS
__codex_shopts=${BASHOPTS:-}
builtin set +e +u
builtin trap - DEBUG ERR RETURN EXIT
__codex_umask=$(builtin umask)
builtin printf '%s\n' '# Snapshot file' '# Unset all aliases to avoid conflicts with functions' 'unalias -a 2>/dev/null || true' "umask $__codex_umask"
__codex_lines=
__codex_count=0
__codex_rest=${__codex_shopts:+$__codex_shopts:}
while [[ -n $__codex_rest ]]; do
  __codex_name=${__codex_rest%%:*}
  __codex_rest=${__codex_rest#*:}
  case $__codex_name in
    ''|login_shell|restricted_shell) ;;
    *)
      __codex_lines+="shopt -s $__codex_name"$'\n'
      __codex_count=$((__codex_count + 1))
      ;;
  esac
done
builtin printf '# shopts %s\n%s' "$__codex_count" "$__codex_lines"
builtin printf '%s\n' '# Functions'
builtin declare -f
builtin printf '\n# aliases %s\n' "$__codex_alias_count"
if [[ -n $__codex_aliases ]]; then
  builtin printf '%s\n' "$__codex_aliases"
fi
builtin printf '\n'
__codex_lines=
__codex_trace=
__codex_count=0
__codex_rest=$__codex_setopts:
while [[ -n $__codex_rest ]]; do
  __codex_name=${__codex_rest%%:*}
  __codex_rest=${__codex_rest#*:}
  case $__codex_name in
    ''|history|monitor|noexec|onecmd|privileged) ;;
    verbose|xtrace)
      __codex_trace+=" -o $__codex_name"
      __codex_count=$((__codex_count + 1))
      ;;
    *)
      __codex_lines+="set -o $__codex_name"$'\n'
      __codex_count=$((__codex_count + 1))
      ;;
  esac
done
if [[ -n $__codex_trace ]]; then
  __codex_lines+="set$__codex_trace"$'\n'
fi
builtin printf '# setopts %s\n%s\n' "$__codex_count" "$__codex_lines"
builtin unset __codex_setopts __codex_shopts __codex_umask __codex_aliases __codex_alias_count __codex_lines __codex_count __codex_rest __codex_name __codex_trace
# Capture exported variables
`

// zshSnapshotScript prints the zsh state. zsh parses a whole -c string before it
// runs any of it, so aliases that the rc file defines cannot reach this script;
// "emulate -R zsh" resets the profile's options (ksharrays, shwordsplit, errexit,
// ...) once setopt has recorded them. These options are never restored, because
// setopt refuses to change them after start-up ("can't change option"):
// interactive, monitor, shinstdin, singlecommand and zle.
const zshSnapshotScript = `if [[ -n "${ZDOTDIR:-}" ]]; then
  __codex_rc="$ZDOTDIR/.zshrc"
else
  __codex_rc="${HOME:-}/.zshrc"
fi
[[ -r "$__codex_rc" ]] && . "$__codex_rc"
__codex_setopt=$(builtin setopt)
builtin emulate -R zsh
__codex_umask=$(builtin umask)
__codex_aliases=$(builtin alias -L)
builtin print -r -- '# Snapshot file'
builtin print -r -- '# Unset all aliases to avoid conflicts with functions'
builtin print -r -- 'unalias -a 2>/dev/null || true'
builtin print -r -- "umask ${(l:4::0:)__codex_umask}"
builtin print -r -- "fpath=(${(j: :)${(@qq)fpath}})"
builtin print -r -- '# Functions'
builtin functions
builtin print -r -- ''
__codex_lines=("${(@f)__codex_aliases}")
builtin print -r -- "# aliases ${#${(@M)__codex_lines:#alias *}}"
if [[ -n $__codex_aliases ]]; then
  builtin print -r -- "$__codex_aliases"
fi
builtin print -r -- ''
__codex_lines=()
__codex_trace=()
__codex_count=0
for __codex_name in "${(@f)__codex_setopt}"; do
  case $__codex_name in
    (''|interactive|monitor|shinstdin|singlecommand|zle) ;;
    (verbose|xtrace)
      __codex_trace+=("$__codex_name")
      (( __codex_count++ ))
      ;;
    (*)
      __codex_lines+=("setopt $__codex_name")
      (( __codex_count++ ))
      ;;
  esac
done
if (( ${#__codex_trace} )); then
  __codex_lines+=("setopt ${(j: :)__codex_trace}")
fi
builtin print -r -- "# setopts $__codex_count"
if (( ${#__codex_lines} )); then
  builtin print -rl -- "${__codex_lines[@]}"
fi
builtin print -r -- ''
builtin unset -m '__codex_*'
# Capture exported variables
`

// shSnapshotScript prints the state of a POSIX sh. dash cannot list functions, so
// only a shell with typeset or declare (bash or ksh as sh) restores any. dash
// prints aliases as name='value', which the script turns into alias commands (the
// reference replays them as variable assignments); a line starts a new alias only
// when the previous one ended its quoted value. These options are never
// restored: history, interactive, monitor, noexec, onecmd, privileged and stdin
// (see bashSnapshotScript).
const shSnapshotScript = `if [ -n "${ENV:-}" ] && [ -r "$ENV" ]; then
  . "$ENV"
fi
__codex_aliases=$(\alias 2>/dev/null) || __codex_aliases=
\unalias -a 2>/dev/null || :
__codex_setopts=
if set -o >/dev/null 2>&1; then
  __codex_setopts=$(set -o)
fi
set +e +u
trap - EXIT
unset IFS
__codex_umask=$(umask)
printf '%s\n' '# Snapshot file' '# Unset all aliases to avoid conflicts with functions' 'unalias -a 2>/dev/null || true' "umask $__codex_umask"
printf '%s\n' '# Functions'
if command -v typeset >/dev/null 2>&1; then
  typeset -f
elif command -v declare >/dev/null 2>&1; then
  declare -f
fi
printf '\n'
__codex_lines=
__codex_count=0
__codex_done=1
if [ -n "$__codex_aliases" ]; then
  while IFS= read -r __codex_line; do
    if [ -n "$__codex_done" ]; then
      case $__codex_line in
        'alias '*)
          __codex_count=$((__codex_count + 1))
          ;;
        *=\'*)
          __codex_name=${__codex_line%%=*}
          case $__codex_name in
            ''|*[!A-Za-z0-9_.@%,:!+-]*) ;;
            *)
              __codex_line="alias $__codex_line"
              __codex_count=$((__codex_count + 1))
              ;;
          esac
          ;;
      esac
    fi
    case $__codex_line in
      *\') __codex_done=1 ;;
      *) __codex_done= ;;
    esac
    __codex_lines="$__codex_lines$__codex_line
"
  done <<__CODEX_EOF
$__codex_aliases
__CODEX_EOF
fi
printf '# aliases %s\n%s\n' "$__codex_count" "$__codex_lines"
__codex_lines=
__codex_trace=
__codex_count=0
while read -r __codex_name __codex_state; do
  [ "$__codex_state" = on ] || continue
  case $__codex_name in
    history|interactive|monitor|noexec|onecmd|privileged|stdin) ;;
    verbose|xtrace)
      __codex_trace="$__codex_trace -o $__codex_name"
      __codex_count=$((__codex_count + 1))
      ;;
    *)
      __codex_lines="${__codex_lines}set -o $__codex_name
"
      __codex_count=$((__codex_count + 1))
      ;;
  esac
done <<__CODEX_EOF
$__codex_setopts
__CODEX_EOF
if [ -n "$__codex_trace" ]; then
  __codex_lines="${__codex_lines}set$__codex_trace
"
fi
printf '# setopts %s\n%s\n' "$__codex_count" "$__codex_lines"
unset __codex_setopts __codex_umask __codex_aliases __codex_lines __codex_count __codex_done __codex_line __codex_name __codex_state __codex_trace
# Capture exported variables
`
