package shellsnap

// shCapture is the capture script of sh (dash). Go runs it as
// [shell, "-c", script, args...] and the script sources the login files
// itself, as dash -l would (/etc/profile, then ~/.profile), so that it knows
// the working directory and the limits before them; then $ENV by the
// reference's rule. It prints the state as records (records.go): the traps
// and options first, while nothing of its own has changed them, then every
// variable (set), the exported and read-only ones, the aliases, the umask,
// the limits before and after the profile, the working directory, the
// positional parameters the profile set and whether it left $! set. dash
// cannot list its functions, so none is captured. @NONCE@ is the capture's
// token. The regular builtins are called through command, which no
// function of the profile can stand for.
const shCapture = `__snapexec_n=@NONCE@
__snapexec_pwd=$PWD
__snapexec_argc=$#
__snapexec_argv=$*
__snapexec_limits=$(command ulimit -a; command printf -- '--\n'; command ulimit -H -a)
if [ -r /etc/profile ]; then . /etc/profile; fi
if [ -r "${HOME:-}/.profile" ]; then . "${HOME:-}/.profile"; fi
if [ -n "${ENV:-}" ] && [ -r "$ENV" ]; then . "$ENV"; fi
__snapexec_bg=${!:-}
command printf '%s\n%s begin sh\n\n' '# Snapshot file' "$__snapexec_n"
command printf '%s traps\n' "$__snapexec_n"; trap; command printf '\n'
command printf '%s setopts\n' "$__snapexec_n"; set +o; command printf '\n'
set +e +u +x +v
trap - EXIT
command printf '%s vars\n' "$__snapexec_n"; set; command printf '\n'
command printf '%s exports\n' "$__snapexec_n"; export -p; command printf '\n'
command printf '%s readonly\n' "$__snapexec_n"; readonly -p; command printf '\n'
command printf '%s aliases\n' "$__snapexec_n"; command alias; command printf '\n'
command printf '%s umask\n' "$__snapexec_n"; command umask; command printf '\n'
command printf '%s limits0\n%s\n' "$__snapexec_n" "$__snapexec_limits"
command printf '%s limits\n' "$__snapexec_n"; command ulimit -a; command printf -- '--\n'; command ulimit -H -a; command printf '\n'
if [ "$PWD" != "$__snapexec_pwd" ]; then command printf '%s cwd\n%s\n' "$__snapexec_n" "$PWD"; fi
if [ "$#" != "$__snapexec_argc" ] || [ "$*" != "$__snapexec_argv" ]; then
  command printf '%s args\n\n' "$__snapexec_n"
  for __snapexec_f in "$@"; do command printf '%s arg\n%s\n' "$__snapexec_n" "$__snapexec_f"; done
fi
if [ -n "$__snapexec_bg" ]; then command printf '%s background\n\n' "$__snapexec_n"; fi
command printf '%s end\n\n\0' "$__snapexec_n"
/usr/bin/env -0
`
