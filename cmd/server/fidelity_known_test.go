package main

import (
	"slices"
	"strings"
	"testing"
)

// knownDifference is a difference of the fidelity suite (fidelity_test.go)
// that is expected today, because its cause in issue 16 is not fixed yet or
// cannot be. It covers the cells of its shells, profiles and modes, and in
// each of them every one of its keys must match a fact that differs (or the
// test fails: the entry must then be narrowed or removed).
type knownDifference struct {
	// item is the cause: the issue 16 item ("H1", "M3", "low: logout", ...)
	// or "design" for what a replay cannot be by construction.
	item string
	// shells are the shells it covers.
	shells []string
	// profiles are the profiles it covers: names, "*" for every one, and
	// "!name" to leave one out of "*".
	profiles []string
	// modes are the modes it covers; nil for all three.
	modes []string
	// keys match the facts that differ (* stands for any text); each must
	// match at least one in every mode of every cell covered.
	keys []string
	// why says what causes it.
	why string
}

// covers reports whether k covers the cell of profile and shell in mode.
func (k *knownDifference) covers(profile, shell, mode string) bool {
	if !slices.Contains(k.shells, shell) || k.modes != nil && !slices.Contains(k.modes, mode) {
		return false
	}
	in := false
	for _, p := range k.profiles {
		switch {
		case p == "!"+profile:
			return false
		case p == "*" || p == profile:
			in = true
		}
	}
	return in
}

// matches reports whether one of k's keys matches the fact key.
func (k *knownDifference) matches(key string) bool {
	return slices.ContainsFunc(k.keys, func(pattern string) bool { return globMatch(pattern, key) })
}

// replayed returns the profiles whose commands the server replays in shell,
// for knownDifferences: every one but those whose capture fails, which then
// run as the plain login shell they asked for (TestFidelity checks the list
// against the receipts).
func replayed(shell string) []string {
	switch shell {
	case "bash":
		return []string{"*", "!exit-in-profile"}
	case "zsh":
		return []string{"*", "!exit-in-profile"}
	}
	return []string{"*", "!exit-in-profile", "!non-utf8-state"}
}

// except returns profiles with names left out.
func except(profiles []string, names ...string) []string {
	out := slices.Clone(profiles)
	for _, name := range names {
		out = append(out, "!"+name)
	}
	return out
}

// The shells, for the table below.
var (
	bash    = []string{"bash"}
	zsh     = []string{"zsh"}
	sh      = []string{"sh"}
	all     = []string{"bash", "zsh", "sh"}
	bashSh  = []string{"bash", "sh"}
	bashZsh = []string{"bash", "zsh"}
	zshSh   = []string{"zsh", "sh"}
)

// The modes, for entries that do not cover all three.
var (
	captureReplay = []string{modeCapture, modeReplay}
	replayStandby = []string{modeReplay, modeStandby}
	standbyOnly   = []string{modeStandby}
)

// knownDifferences is the measurement of issue 16: every difference between
// a replayed command and its login shell that the suite finds today, by
// cause. An entry goes when its cause is fixed (the test says so).
var knownDifferences = []knownDifference{
	// What a replay is by construction.
	{item: "design: /proc cmdline", shells: bash, profiles: replayed("bash"), keys: []string{"shell cmdline"},
		why: "/proc/PID/cmdline shows bash --noprofile -lc script: one word more than the login shell's"},
	{item: "design: /proc cmdline", shells: zsh, profiles: replayed("zsh"), keys: []string{"shell cmdline"}, why: "as bash (zsh -fc)"},
	{item: "design: /proc cmdline", shells: sh, profiles: replayed("sh"), keys: []string{"shell cmdline"}, why: "as bash (sh -c)"},
	{item: "design: profile output", shells: all, profiles: []string{"noise"}, keys: []string{"stdout before probe", "stderr"},
		why: "a replay runs no profile, so what the profile prints is not printed again"},
	{item: "M9 reference rule", shells: all, profiles: []string{"m9-rc-only"}, keys: []string{"*RC_ONLY"},
		why: "the capture sources ~/.bashrc, ~/.zshrc and $ENV as the reference does, which bash -lc, zsh -lc and sh -lc do not read"},
	{item: "M9 reference rule", shells: bashZsh, profiles: []string{"m9-rc-only"}, keys: []string{"fn* rc_fn"}, why: "as RC_ONLY (dash loses the function anyway: M11)"},
	{item: "M9 reference rule", shells: zsh, profiles: []string{"zsh-newuser"}, keys: []string{"fn *", "set -o histignorealldups", "set -o sharehistory"},
		why: "the capture sources ~/.zshrc (promptinit, zstyles, history options), which zsh -lc does not read"},
	{item: "M9 reference rule", shells: zsh, profiles: []string{"zsh-zdotdir"}, keys: []string{"*FROM_ZDOTDIR_RC"},
		why: "the capture sources $ZDOTDIR/.zshrc, which zsh -lc does not read"},

	// High.
	{item: "design: request branch", shells: bash, profiles: []string{"h2-request-vars"}, keys: []string{"*PAGER", "*MODE", "*DROP_ME"},
		why: "the profile branched on variables the capturing request did not send: the replay repeats the capture's branch (PAGER=less as the profile's default, MODE=dev) and cannot unset DROP_ME, whose unset left no trace"},
	{item: "H2", shells: zshSh, profiles: []string{"h2-env-leak"}, keys: []string{"*API_TOKEN", "env PATH"},
		why: "the replay applies the captured environment: a variable sent only with the capture reaches later requests, and a later request's own PATH replaces the profile's (the login shell's /etc/profile rebuilds it, $HOME/bin first)"},
	{item: "H2", shells: sh, profiles: []string{"h2-env-leak"}, keys: []string{"*PATH"}, why: "as API_TOKEN"},
	{item: "H2", shells: zsh, profiles: []string{"h2-env-leak"}, keys: []string{"var path*"}, why: "as API_TOKEN"},
	{item: "H2", shells: zsh, profiles: []string{"h2-env-leak"}, keys: []string{"env BASH_FUNC_sent_fn%%"},
		why: "an exported function sent only with the capture stays in the environment of later requests"},
	{item: "H2", shells: zshSh, profiles: []string{"h2-request-vars"}, keys: []string{"*EDITOR", "*MODE", "*DROP_ME"},
		why: "a request value that differs from the capture's wins over the profile: EDITOR the profile sets is the request's, MODE the profile derives from CI is the capture's, DROP_ME the profile unsets is back"},

	// Medium.
	{item: "M3", shells: sh, profiles: replayed("sh"), keys: []string{"error cd", "error not found", "error unbound"},
		why: "sh: the restore's eval takes the 2 lines before the script: every error's line number is 2 more"},
	{item: "M3", shells: sh, profiles: []string{"m3-lineno", "m12-exit-tail"}, modes: replayStandby, keys: []string{"error line: stderr"},
		why: "as lineno, in a script whose second line fails"},
	{item: "design: function source", shells: bash, profiles: []string{"cd-override"}, keys: []string{"error cd"},
		why: "a restored function comes from the restore file: an error in it names that file and its line there (the profile's cd function runs the probe's failing cd)"},
	{item: "design: function source", shells: bash, profiles: []string{"m3-lineno"}, keys: []string{"error in a profile function", "extdebug declare -F"},
		why: "a function restored by eval has no source file: its errors say \"environment: line 25\" instead of \".bash_profile: line 2\", and extdebug's declare -F shows the same"},
	{item: "M3", shells: zsh, profiles: []string{"m3-lineno"}, keys: []string{"whence -v"},
		why: "a function restored by eval comes \"from zsh\", not from ~/.zprofile"},
	{item: "M4", shells: zsh, profiles: []string{"zsh-emulate-sh"}, keys: []string{"set -o *", "brace", "ifs split", "$0 $# $-", "error syntax", "glob @(a).c", "glob *.zzz"},
		why: "after emulate sh, setopt lists options relative to sh's defaults, and the restore (under emulate -R zsh) sets them relative to zsh's: 39 options come out wrong"},
	{item: "M5", shells: zshSh, profiles: []string{"m5-unexported", "kitchen-sink"}, keys: []string{"var PS1", "var PS2", "var LC_ALL", "var plain_var", "var IFS"},
		why: "the capture keeps exported variables only: prompts, IFS, LC_ALL and plain variables the profile set are lost"},
	{item: "M5", shells: sh, profiles: []string{"m5-unexported", "kitchen-sink"}, keys: []string{"ifs split"}, why: "as IFS (zsh does not split unquoted words)"},
	{item: "M5", shells: zsh, profiles: []string{"m5-unexported", "kitchen-sink"}, keys: []string{"var PROMPT*", "var prompt", "var HIST*", "var SAVEHIST", "var FUNCNEST", "var TMOUT", "var cdpath*", "var colors", "var fruits"},
		why: "unexported prompts, HIST*, FUNCNEST, TMOUT, cdpath and arrays are lost"},
	{item: "M5", shells: sh, profiles: []string{"m5-unexported", "kitchen-sink"}, keys: []string{"var CDPATH"},
		why: "an unexported CDPATH is lost"},
	{item: "M5", shells: zshSh, profiles: []string{"conda-like", "prompts"}, keys: []string{"var PS1"},
		why: "PS1 is not exported, so the prompt a tool built is lost"},
	{item: "M5", shells: zsh, profiles: []string{"conda-like", "prompts"}, keys: []string{"var PROMPT", "var prompt"},
		why: "as PS1"},
	{item: "M5", shells: zsh, profiles: []string{"prompts"}, keys: []string{"var RPROMPT", "var precmd_functions"}, why: "RPROMPT and the precmd hooks are lost"},
	{item: "M5", shells: zsh, profiles: []string{"pyenv-like"}, keys: []string{"var precmd_functions"}, why: "the precmd hook a tool added is lost"},
	{item: "M5", shells: zsh, profiles: []string{"arrays"}, keys: []string{"var assoc", "var empty_arr", "var empty_assoc", "var tricky"},
		why: "arrays and associative arrays are lost"},
	{item: "M5", shells: zshSh, profiles: []string{"tricky-values"}, keys: []string{"var OPTIND", "var opt", "var plain_nl"},
		why: "the profile's getopts state (OPTIND, its variable) and plain variables are lost"},
	{item: "M5", shells: zshSh, profiles: []string{"tricky-values"}, keys: []string{"var OPTARG"}, why: "OPTARG is lost"},
	{item: "M5", shells: zsh, profiles: []string{"cd-override"}, keys: []string{"var CD_RUNS"}, why: "a counter the profile keeps is lost"},
	{item: "M5", shells: zsh, profiles: []string{"cd-override"}, keys: []string{"var chpwd_functions"}, why: "the chpwd hooks are lost"},
	{item: "M5", shells: zshSh, profiles: []string{"nvm-like"}, keys: []string{"var NVM_CD_FLAGS"}, why: "nvm's unexported NVM_CD_FLAGS is lost"},
	{item: "M5", shells: zshSh, profiles: []string{"m9-rc-twice", "kitchen-sink"}, keys: []string{"var RC_RUNS"}, why: "an unexported variable of the rc file is lost"},
	{item: "M5", shells: zsh, profiles: []string{"xtrace"}, keys: []string{"var PS4", "var PROMPT4", "stderr", "status child SIGSEGV", "error syntax", "glob @(a).c", "glob *"},
		why: "PS4 is lost, so the trace looks otherwise; and inside the restore's eval zsh traces the eval, not the script's commands"},
	{item: "M6", shells: zsh, profiles: []string{"m6-attributes", "kitchen-sink"}, keys: []string{"var EXPORTED_INT", "var EXPORTED_RO", "var FLOAT_VAR", "var INT_VAR", "var LOWER_VAR", "var RO_VAR", "var UPPER_VAR", "var ZERO_VAR", "var tied_var*", "var uniq_arr", "var TMOUT"},
		why: "attributes are lost: readonly, integer, float, zero-fill, -l/-u, tied and unique arrays"},
	{item: "M6", shells: sh, profiles: []string{"m6-attributes", "kitchen-sink"}, keys: []string{"export EXPORTED_NO_VALUE", "readonly *", "var RO_VAR", "var TMOUT"},
		why: "readonly is lost, and an exported variable without a value"},
	{item: "M6", shells: zsh, profiles: []string{"zsh-options"}, keys: []string{"var path #2"}, why: "typeset -U path (unique) is lost"},
	{item: "M7", shells: zshSh, profiles: []string{"m7-traps", "kitchen-sink"}, keys: []string{"trap *", "after end", "child status SigIgn", "shell status SigIgn", "shell status SigCgt"},
		why: "traps are lost, and the ignored signals a child of the login shell inherits (trap '' HUP PIPE); the EXIT trap does not run"},
	{item: "M7", shells: zshSh, profiles: []string{"m7-ulimits", "kitchen-sink"}, keys: []string{"ulimit -*", "child limits *"},
		why: "ulimit settings are lost: soft and hard"},
	{item: "M7", shells: zsh, profiles: []string{"m7-ulimits", "kitchen-sink"}, keys: []string{"zmodload zmodload zsh/rlimits"},
		why: "the profile's ulimit loaded zsh/rlimits"},
	{item: "M8", shells: zshSh, profiles: []string{"m8-cd", "kitchen-sink"}, keys: []string{"pwd", "*PWD"},
		why: "a cd in the profile is not replayed: commands start in the request's cwd"},
	{item: "M8", shells: zshSh, profiles: []string{"m8-cd"}, keys: []string{"glob *"}, why: "as pwd"},
	{item: "M8", shells: zsh, profiles: []string{"kitchen-sink"}, keys: []string{"glob *"}, why: "as pwd (sh's kitchen sink has noglob on)"},
	{item: "M8", shells: sh, profiles: []string{"m8-cd", "kitchen-sink"}, keys: []string{"*OLDPWD"},
		why: "and OLDPWD, which the cd set, is lost"},
	{item: "M8", shells: zsh, profiles: []string{"m8-cd", "m8-pushd", "kitchen-sink"}, keys: []string{"dirs"},
		why: "the directory stack is not replayed"},
	{item: "M8", shells: zsh, profiles: []string{"m8-pushd"}, keys: []string{"pwd", "env *PWD", "var *PWD", "glob *"},
		why: "pushd in the profile: cwd, OLDPWD and the stack are lost"},
	{item: "M9", shells: zshSh, profiles: []string{"m9-rc-twice", "kitchen-sink"}, keys: []string{"env PATH"},
		why: "the capture sources the rc file (or $ENV) again after the login file did: its PATH entry is doubled"},
	{item: "M9", shells: sh, profiles: []string{"m9-rc-twice", "kitchen-sink"}, keys: []string{"*PATH"}, why: "as env PATH"},
	{item: "M9", shells: zsh, profiles: []string{"m9-rc-twice", "kitchen-sink"}, keys: []string{"var path", "var path #2"}, why: "as env PATH"},
	{item: "M10", shells: zshSh, profiles: []string{"m10-stale-extra"}, keys: []string{"*EXTRA_VERSION", "alias extra_alias", "call extra_fn"},
		why: "only the startup files are stamped: ~/.extra, which the profile sources, changed after the capture and the replay still serves the old state"},
	{item: "M10", shells: zsh, profiles: []string{"m10-stale-extra"}, keys: []string{"fn extra_fn"}, why: "as EXTRA_VERSION"},
	{item: "M10", shells: zshSh, profiles: []string{"m10-stale-envrc"}, keys: []string{"*PROJECT"},
		why: "the cwd's .envrc, which the profile sources, changed after the capture: the replay serves the old value"},
	{item: "M11", shells: sh, profiles: []string{"plain", "exported-functions", "kitchen-sink"}, keys: []string{"fn greet"},
		why: "dash cannot list its functions, so the capture saves none"},
	{item: "M11", shells: sh, profiles: []string{"m11-functions"}, keys: []string{"fn *", "call functions"}, why: "as greet"},
	{item: "M11", shells: sh, profiles: []string{"m3-lineno"}, keys: []string{"fn fail_fn", "error in a profile function"}, why: "as greet"},
	{item: "M11", shells: sh, profiles: []string{"m9-rc-twice", "kitchen-sink"}, keys: []string{"fn rc_fn"}, why: "as greet"},
	{item: "M11", shells: sh, profiles: []string{"errexit-nounset"}, keys: []string{"fn f"}, why: "as greet"},
	{item: "M11", shells: sh, profiles: []string{"m10-stale-extra"}, keys: []string{"fn extra_fn"}, why: "as greet"},
	{item: "M11", shells: sh, profiles: []string{"conda-like"}, keys: []string{"fn conda", "fn __conda_activate"}, why: "as greet"},
	{item: "M11", shells: sh, profiles: []string{"nvm-like"}, keys: []string{"fn nvm", "fn nvm_echo", "nvm current"}, why: "as greet"},
	{item: "M11", shells: sh, profiles: []string{"state-injection"}, keys: []string{"fn injected_fn"}, why: "as greet"},
	{item: "M11", shells: sh, profiles: []string{"low-builtin-names"}, keys: []string{"fn alias", "fn umask"}, why: "as greet: the functions named alias and umask are builtins again"},
	{item: "M12", shells: zsh, profiles: replayed("zsh"), keys: []string{"error cd", "error unbound", "eval context"},
		why: "zsh runs the script inside eval: errors say (eval):N: instead of zsh:N:, and zsh_eval_context ends in eval"},
	{item: "M12", shells: zsh, profiles: except(replayed("zsh"), "command-not-found"), keys: []string{"error not found"}, why: "as error cd"},
	{item: "M12", shells: zsh, profiles: except(replayed("zsh"), "kitchen-sink", "m4-options-off"), keys: []string{"glob *.zzz"},
		why: "as error cd (with NOMATCH off there is no error)"},
	{item: "M12", shells: zsh, profiles: []string{"m3-lineno", "m12-exit-tail"}, modes: []string{modeReplay}, keys: []string{"error line: stderr"}, why: "as error cd"},
	{item: "M12", shells: zsh, profiles: []string{"m12-exit-tail"}, modes: []string{modeReplay}, keys: []string{"crash child: exit", "crash program: exit"},
		why: "inside eval zsh forks the last program instead of running it in its place: its crash is exit 139 (134), not SIGSEGV (SIGABRT)"},

	{item: "M9 watch", shells: bash, profiles: []string{"kitchen-sink"}, keys: []string{"*PATH", "var RC_RUNS"},
		why: "the profile's own DEBUG trap (trap ':' DEBUG) ends the capture's watch of the files it sources, so the capture does not see that ~/.bashrc ran and sources it again by the reference's rule"},

	// Low.
	{item: "low: $_", shells: bash, profiles: []string{"low-bash-env"}, keys: []string{"$_"},
		why: "the restore runs the request's BASH_ENV with \".\", which leaves $_ set to the file's name, where bash's own start-up leaves the file's last argument"},
	{item: "M9 reference rule", shells: bash, profiles: []string{"m9-rc-only"}, keys: []string{"$_"},
		why: "as RC_ONLY: $_ is the last argument of ~/.bashrc, which the capture sources"},
	{item: "low: $_", shells: zsh, profiles: replayed("zsh"), keys: []string{"$_"}, why: "zsh: $_ at the start is the script itself, the argument of the eval"},
	{item: "low: execution string", shells: zsh, profiles: replayed("zsh"), keys: []string{"execution string"}, why: "ZSH_EXECUTION_STRING holds the replay's command"},
	{item: "M3", shells: sh, profiles: []string{"low-logout"}, modes: []string{modeReplay}, keys: []string{"logout: stderr"},
		why: "dash has no logout; its error's line number is 2 more"},
	{item: "low: exported IFS", shells: sh, profiles: []string{"low-exported-ifs"}, keys: []string{"env IFS", "var IFS", "ifs split"},
		why: "an exported IFS reaches the replay through the environment, which bash and dash do not import IFS from: the shell's IFS is the default and its child's too"},
	{item: "low: exported IFS", shells: sh, profiles: []string{"low-exported-ifs"}, keys: []string{"export IFS", "export ,'"}, why: "as IFS"},
	{item: "low: exported IFS", shells: zsh, profiles: []string{"low-exported-ifs"}, keys: []string{"var IFS"}, why: "as IFS"},
	{item: "low: builtin names", shells: zshSh, profiles: []string{"low-builtin-names"}, keys: []string{"var CALLS"},
		why: "functions named set, alias, builtin, umask, unalias (setopt) are called by the restore itself, or lost"},
	{item: "low: non-UTF-8", shells: zshSh, profiles: []string{"low-non-utf8-env"}, keys: []string{"env BAD_BYTES", "var BAD_BYTES"},
		why: "an exported value that is not UTF-8 is dropped by the capture's parse"},
	{item: "low: non-UTF-8", shells: sh, profiles: []string{"low-non-utf8-env"}, keys: []string{"export BAD_BYTES"}, why: "as BAD_BYTES"},
	{item: "low: zsh modules", shells: zsh, profiles: []string{"low-completion"}, keys: []string{"named dir proj", "zmodload *", "zstyle *"},
		why: "zsh modules, zstyles and named directories are lost"},
	{item: "low: enable -n", shells: zsh, profiles: []string{"low-enable-n"}, keys: []string{"disabled kill", "whence kill"}, why: "builtins disabled by disable are enabled again"},
	{item: "low: hash -p", shells: zsh, profiles: []string{"low-hash-p"}, keys: []string{"type myecho"}, why: "commands hashed by hand are forgotten"},

	// Causes issue 16 does not list.
	{item: "design: /proc environ", shells: bash, profiles: replayed("bash"), keys: []string{"shell environ"},
		why: "the shell's initial environment is the request's and BASH_ENV, which names the restore file (the profile's exports are set by the restore, as a profile sets them)"},
	{item: "new: /proc environ", shells: zsh, profiles: replayed("zsh"), keys: []string{"shell environ"}, why: "as bash"},
	{item: "new: /proc environ", shells: sh, profiles: replayed("sh"), keys: []string{"shell environ"}, why: "as bash"},
	{item: "new: positional parameters", shells: zshSh, profiles: []string{"positional"}, keys: []string{"$@"},
		why: "set -- in the profile sets the command's positional parameters in a login shell; a replay has none"},
	{item: "new: positional parameters", shells: sh, profiles: []string{"positional"}, keys: []string{"$0 $# $-"}, why: "as $@ (bash: BASH_ARGV0 renames $0)"},
	{item: "new: positional parameters", shells: zsh, profiles: []string{"positional"}, keys: []string{"$0 $# $-", "var argv"}, why: "as $@"},
	{item: "new: $!", shells: sh, profiles: []string{"background-job"}, keys: []string{"$! is set"},
		why: "$! (the profile's last background job) is not carried"},
	{item: "new: standby in a builtin function", shells: bash, profiles: []string{"low-builtin-names"}, modes: standbyOnly, keys: []string{"$0 $# $-", "$@", "var BASH_LINENO", "var BASH_SOURCE", "var FUNCNAME", "var BASH_ARGC"},
		why: "the standby's \\builtin eval calls the profile's function named builtin: the script runs inside it, with its positional parameters (eval and the script) and FUNCNAME"},
	{item: "new: zsh function text", shells: zsh, profiles: []string{"conda-like"}, keys: []string{"fn conda"},
		why: "zsh prints case patterns as (a | b); read back, the function prints (a|b): its text is not what the login shell shows"},
	{item: "new: zsh function text", shells: zsh, profiles: []string{"pyenv-like"}, keys: []string{"fn pyenv"}, why: "as conda"},
	{item: "new: zsh descriptors", shells: zsh, profiles: []string{"prompts", "xtrace"}, keys: []string{"shell fds"},
		why: "zsh's own descriptors (10-12) depend on what ran before the script: the profile, or the restore"},
}

// TestFidelityTables checks the suite's own tables, which TestFidelity
// cannot: a known difference that names a profile missing from a shell
// would never be checked.
func TestFidelityTables(t *testing.T) {
	profiles := map[string]*fidelityProfile{}
	for _, p := range fidelityProfiles {
		if profiles[p.name] != nil || p.covers == "" || p.files == nil {
			t.Errorf("profile %q: duplicate, or without covers or files", p.name)
		}
		profiles[p.name] = p
	}
	exists := func(name string) bool { return profiles[strings.TrimPrefix(name, "!")] != nil }
	for _, sh := range []string{"bash", "zsh", "sh"} {
		for _, name := range replayed(sh)[1:] {
			if !strings.HasPrefix(name, "!") || !exists(name) {
				t.Errorf("replayed(%q) lists %q, want \"!\" and a profile", sh, name)
			}
		}
	}
	for _, k := range knownDifferences {
		if k.item == "" || k.why == "" || len(k.keys) == 0 || len(k.shells) == 0 || len(k.profiles) == 0 {
			t.Errorf("known difference %v: item, why, keys, shells and profiles are all needed", k.keys)
		}
		for _, mode := range k.modes {
			if !slices.Contains(fidelityModes, mode) {
				t.Errorf("known difference %v: mode %q", k.keys, mode)
			}
		}
		for _, name := range k.profiles {
			switch {
			case name == "*":
			case !exists(name):
				t.Errorf("known difference %v: no profile %q", k.keys, name)
			case !strings.HasPrefix(name, "!"):
				for _, sh := range k.shells {
					if !profiles[name].runs(sh) {
						t.Errorf("known difference %v: profile %q does not run in %s", k.keys, name, sh)
					}
				}
			}
		}
	}
}
