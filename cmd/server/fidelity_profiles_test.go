package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// fidelityProfile generates the startup files of one case of issue 16 for
// the fidelity suite (fidelity_test.go).
type fidelityProfile struct {
	// name names the profile in subtests, the report and knownDifferences.
	name string
	// covers is the issue 16 item the profile shows ("H1", "M3", "low: ..."),
	// or the odd case it is.
	covers string
	// shells are the shells it runs in; nil for all three.
	shells []string
	// files returns the files to write for shell, relative to home. A file
	// whose text starts with "#!" is made executable.
	files func(shell, home string) map[string]string
	// env returns the variables every request (and the login shell) gets
	// besides HOME and PATH.
	env func(shell, home string) map[string]string
	// captureEnv, when set, returns the environment of the capturing
	// request alone, from the others'.
	captureEnv func(shell, home string, env map[string]string) map[string]string
	// edit, when set, returns the files rewritten after the capture.
	edit func(shell, home string) map[string]string
	// funcs are the functions the profile defines, which sh's probe looks
	// for (dash cannot list them).
	funcs []string
	// probe holds lines to add to the probe, by shell; "" for every shell.
	probe map[string]string
	// scripts returns scripts to run beside the probe.
	scripts func(shell string) []fidelityScript
}

// runs reports whether p runs in shell.
func (p *fidelityProfile) runs(shell string) bool {
	return p.shells == nil || slices.Contains(p.shells, shell)
}

// probeLines returns the lines p adds to the probe of shell.
func (p *fidelityProfile) probeLines(shell string) string {
	return p.probe[""] + p.probe[shell]
}

// loginFile is the file of HOME a login shell reads.
func loginFile(shell string) string {
	switch shell {
	case "bash":
		return ".bash_profile"
	case "zsh":
		return ".zprofile"
	}
	return ".profile"
}

// inLogin puts text in every shell's login file.
func inLogin(text string) func(shell, home string) map[string]string {
	return func(shell, _ string) map[string]string { return map[string]string{loginFile(shell): text} }
}

// byShell puts each shell's text in its login file.
func byShell(texts map[string]string) func(shell, home string) map[string]string {
	return func(shell, _ string) map[string]string { return map[string]string{loginFile(shell): texts[shell]} }
}

// withFiles adds files (the same for every shell) to gen's.
func withFiles(gen func(shell, home string) map[string]string, files map[string]string) func(shell, home string) map[string]string {
	return func(shell, home string) map[string]string {
		out := gen(shell, home)
		maps.Copy(out, files)
		return out
	}
}

// combine concatenates the files of gens, in order.
func combine(gens ...func(shell, home string) map[string]string) func(shell, home string) map[string]string {
	return func(shell, home string) map[string]string {
		out := map[string]string{}
		for _, gen := range gens {
			for name, text := range gen(shell, home) {
				out[name] += text
			}
		}
		return out
	}
}

// The texts of the profiles that combinations reuse.
var (
	plainFiles = byShell(map[string]string{
		"bash": "export EDITOR=vim\nexport PATH=\"$HOME/bin:$PATH\"\ngreet() { echo \"hello $1\"; }\nshopt -s expand_aliases\nalias ll='ls -l'\numask 027\n",
		"zsh":  "export EDITOR=vim\nexport PATH=\"$HOME/bin:$PATH\"\ngreet() { echo \"hello $1\"; }\nalias ll='ls -l'\numask 027\n",
		"sh":   "export EDITOR=vim\nexport PATH=\"$HOME/bin:$PATH\"\ngreet() { echo \"hello $1\"; }\nalias ll='ls -l'\numask 027\n",
	})
	optionsOffFiles = byShell(map[string]string{
		"bash": "set +B\nset +h\nshopt -u patsub_replacement sourcepath progcomp globskipdots\n",
		"zsh":  "unsetopt NOMATCH HASH_CMDS EQUALS MULTIOS FUNCTION_ARGZERO SHORT_LOOPS BARE_GLOB_QUAL\n",
		"sh":   "set -o noglob -o noclobber\n",
	})
	unexportedFiles = byShell(map[string]string{
		"bash": `PS1='\u@\h:\w\$ '
PS2='more> '
PS4='+ ${BASH_SOURCE##*/}:${LINENO}: '
PROMPT_COMMAND='history -a'
fruits=(apple 'banana split' '')
declare -A colors=([red]='#f00' [green]='#0f0')
HISTFILE="$HOME/.hist"; HISTSIZE=5000; HISTFILESIZE=10000; HISTCONTROL=ignoreboth; HISTIGNORE='ls:cd'
FUNCNEST=50
TMOUT=300
IFS=$' \t\n:'
CDPATH=".:$HOME"
LC_ALL=C
plain_var='not exported'
`,
		"zsh": `PS1='%n@%m %~ %# '
PS2='more> '
PS4='+%N:%i> '
fruits=(apple 'banana split' '')
typeset -A colors
colors=(red '#f00' green '#0f0')
HISTFILE="$HOME/.hist"; HISTSIZE=5000; SAVEHIST=10000
FUNCNEST=50
TMOUT=300
IFS=$' \t\n:'
cdpath=(. "$HOME")
LC_ALL=C
plain_var='not exported'
`,
		"sh": `PS1='$ '
PS2='more> '
PS4='+ '
IFS=' 	
:'
CDPATH=".:$HOME"
LC_ALL=C
plain_var='not exported'
`,
	})
	attributeFiles = byShell(map[string]string{
		"bash": `declare -r RO_VAR=fixed
declare -i INT_VAR=6*7
declare -l LOWER_VAR=MiXeD
declare -u UPPER_VAR=MiXeD
target=value
declare -n REF_VAR=target
declare -ix EXPORTED_INT=1+1
declare -rx EXPORTED_RO=ro
declare -x EXPORTED_NO_VALUE
declare -a -r RO_ARRAY=(a b)
declare -t TRACED_VAR=1
readonly TMOUT=600
`,
		"zsh": `typeset -r RO_VAR=fixed
typeset -i INT_VAR=6*7
typeset -l LOWER_VAR=MiXeD
typeset -u UPPER_VAR=MiXeD
typeset -ix EXPORTED_INT=1+1
typeset -rx EXPORTED_RO=ro
typeset -x EXPORTED_NO_VALUE
typeset -F 3 FLOAT_VAR=3.14159
typeset -Z 5 ZERO_VAR=42
typeset -T TIED_VAR tied_var
tied_var=(a b)
typeset -U uniq_arr
uniq_arr=(a a b)
readonly TMOUT=600
`,
		"sh": `readonly RO_VAR=fixed
export EXPORTED_NO_VALUE
EXPORTED_RO=ro
readonly EXPORTED_RO
export EXPORTED_RO
readonly TMOUT=600
`,
	})
	trapFiles = byShell(map[string]string{
		"bash": "trap 'echo bye from the exit trap' EXIT\ntrap '' HUP\ntrap 'echo usr1' USR1\ntrap '' PIPE\ntrap 'echo err-trap >&2' ERR\ntrap ':' DEBUG\nset -o errtrace -o functrace\n",
		"zsh":  "trap 'echo bye from the exit trap' EXIT\ntrap '' HUP\ntrap 'echo usr1' USR1\ntrap '' PIPE\nTRAPUSR2() { echo usr2; }\n",
		"sh":   "trap 'echo bye from the exit trap' EXIT\ntrap '' HUP\ntrap 'echo usr1' USR1\ntrap '' PIPE\n",
	})
	ulimitFiles  = inLogin("ulimit -S -n 512\nulimit -S -s 4096\nulimit -S -c 0\nulimit -H -c 1024\numask 0077\n")
	cdFiles      = withFiles(inLogin("cd \"$HOME/proj\"\n"), map[string]string{"proj/file-in-proj": ""})
	rcTwiceFiles = func(shell, _ string) map[string]string {
		rc := "export PATH=\"$HOME/rc-bin:$PATH\"\nRC_RUNS=\"${RC_RUNS:-}x\"\nrc_fn() { echo rc; }\n"
		switch shell {
		case "bash":
			return map[string]string{".bash_profile": "export PATH=\"$HOME/bin:$PATH\"\n[ -f \"$HOME/.bashrc\" ] && . \"$HOME/.bashrc\"\n", ".bashrc": rc}
		case "zsh":
			return map[string]string{".zprofile": "export PATH=\"$HOME/bin:$PATH\"\n[ -f \"$HOME/.zshrc\" ] && . \"$HOME/.zshrc\"\n", ".zshrc": rc}
		}
		return map[string]string{".profile": "export PATH=\"$HOME/bin:$PATH\"\nexport ENV=\"$HOME/.shrc\"\n. \"$ENV\"\n", ".shrc": rc}
	}
	oddNameFiles = inLogin(`function my-fn { echo dash; }
function my.fn { echo dot; }
function my:fn { echo colon; }
function ns::fn { echo ns; }
function @at { echo at; }
function +plus { echo plus; }
function 9lives { echo nine; }
function fé { echo accent; }
after_odd() { echo after; }
`)
	aliasFiles = byShell(map[string]string{
		"bash": "shopt -s expand_aliases\nalias sudo='sudo '\nalias gs='git status'\nalias q=\"echo 'single' \\\"double\\\"\"\nalias nl='echo one\necho two'\nalias eq='env A=b=c'\nalias ll='ls -l'\nalias la='ll -a'\n",
		"zsh":  "alias sudo='sudo '\nalias gs='git status'\nalias q=\"echo 'single' \\\"double\\\"\"\nalias nl='echo one\necho two'\nalias eq='env A=b=c'\nalias -g G='| grep'\nalias -s txt=cat\n",
		"sh":   "alias sudo='sudo '\nalias gs='git status'\nalias q=\"echo 'single' \\\"double\\\"\"\nalias nl='echo one\necho two'\nalias eq='env A=b=c'\n",
	})
)

// bigState writes a profile whose state is larger than two chunks of the
// replay's transport (60 KiB each) and an export near Linux's 128 KiB limit
// on one environment string.
func bigState(shell, _ string) map[string]string {
	var b strings.Builder
	for i := range 250 {
		fmt.Fprintf(&b, "big_fn_%03d() {\n  local n=%d\n  echo \"big_fn_%03d $n $*\" '%s'\n}\n", i, i, i, strings.Repeat("x", 500))
	}
	for i := range 100 {
		fmt.Fprintf(&b, "alias big_alias_%03d='echo %d'\n", i, i)
		fmt.Fprintf(&b, "export BIG_VAR_%03d=value-%d\n", i, i)
	}
	b.WriteString("export BIG_EXPORT=\"$(printf '%0100000d' 0)\"\n")
	return map[string]string{loginFile(shell): b.String()}
}

// crashScripts are the scripts that end by a program's signal or exit code,
// which a replay must report as the login shell does (M12). Each first turns
// core dumps off, so that no core file changes the cwd the next probe lists.
func crashScripts(string) []fidelityScript {
	return []fidelityScript{
		{"crash child", "ulimit -S -c 0; printf 'before\\n'; /bin/sh -c 'kill -SEGV $$'"},
		{"crash program", "ulimit -S -c 0; printf 'before\\n'; /usr/bin/perl -e 'CORE::dump()'"},
		{"crash self", "ulimit -S -c 0; printf 'before\\n'; kill -SEGV $$"},
		{"exit 3", "printf 'before\\n'; exit 3"},
		{"error line", "printf 'before\\n'\nfidelity_no_such_command\nprintf 'line %s\\n' \"$LINENO\""},
	}
}

// fidelityProfiles are the profiles the suite runs.
var fidelityProfiles = []*fidelityProfile{
	// Baselines.
	{name: "empty", covers: "baseline: what differs with no profile at all", files: inLogin("")},
	{name: "plain", covers: "baseline: exports, a PATH prepend, a function, an alias, a umask", files: plainFiles, funcs: []string{"greet"}},

	// High.
	{name: "h1-extglob-fn", covers: "H1: a function that needs extglob, defined before the profile turns it off", shells: []string{"bash", "zsh"},
		files: byShell(map[string]string{
			"bash": "shopt -s extglob\next_fn() { case $1 in +([0-9])) echo number;; *) echo other;; esac; }\nshopt -u extglob\nafter_fn() { echo after; }\nshopt -s expand_aliases\nalias la='ls -a'\nset -o pipefail\nexport AFTER_VAR=1\n",
			"zsh":  "setopt KSH_GLOB\next_fn() { case $1 in +([0-9])) echo number;; *) echo other;; esac }\nunsetopt KSH_GLOB\nafter_fn() { echo after; }\nalias la='ls -a'\nsetopt PIPE_FAIL\nexport AFTER_VAR=1\n",
		})},
	{name: "h1-fn-a=b", covers: "H1: a function named a=b, which declare -f prints as an assignment", shells: []string{"bash", "zsh"},
		files: inLogin("function a=b { echo odd; }\nafter_fn() { echo after; }\nalias la='ls -a'\nset -o pipefail\n")},
	{name: "h1-fn-reserved", covers: "H1 control: functions named like reserved words (if, do), which bash prints with the function keyword and so reads back", shells: []string{"bash"},
		files: inLogin("function if { echo if; }\nfunction do { echo do; }\nafter_fn() { echo after; }\nalias la='ls -a'\nset -o pipefail\n")},
	{name: "h2-env-leak", covers: "H2: a variable and an exported function sent only in the capturing request, and a later request's own PATH",
		files: inLogin("export PATH=\"$HOME/bin:$PATH\"\nexport FROM_PROFILE=1\n"),
		env: func(string, string) map[string]string {
			return map[string]string{"PATH": "/usr/local/bin:/usr/bin:/bin"}
		},
		captureEnv: func(_, _ string, env map[string]string) map[string]string {
			env["PATH"] = "/usr/bin:/bin"
			env["API_TOKEN"] = "sent-only-with-the-capture"
			env["BASH_FUNC_sent_fn%%"] = "() {  echo sent\n}"
			return env
		}},
	{name: "h2-request-vars", covers: "H2: request variables the profile overrides, defaults, branches on and unsets",
		files: inLogin("export EDITOR=vim\n: \"${PAGER:=less}\"\nexport PAGER\nif [ -n \"${CI:-}\" ]; then export MODE=ci; else export MODE=dev; fi\nunset DROP_ME\n"),
		env: func(string, string) map[string]string {
			return map[string]string{"EDITOR": "nano", "PAGER": "more", "CI": "1", "DROP_ME": "x"}
		},
		captureEnv: func(_, _ string, env map[string]string) map[string]string {
			for _, name := range []string{"EDITOR", "PAGER", "CI", "DROP_ME"} {
				delete(env, name)
			}
			return env
		}},

	// Medium.
	{name: "m3-lineno", covers: "M3: LINENO and error line numbers, in the script and in a profile function",
		files: inLogin("fail_fn() {\n  fidelity_missing_in_fn\n}\n"), funcs: []string{"fail_fn"},
		probe: map[string]string{
			"":     "printf '@@ error in a profile function\\n'; { fail_fn; } 2>&1 || :\n",
			"bash": "printf '@@ extdebug declare -F\\n'; ( shopt -s extdebug; declare -F fail_fn )\n",
			"zsh":  "printf '@@ whence -v\\n'; whence -v fail_fn\n",
		},
		scripts: func(string) []fidelityScript {
			return []fidelityScript{{"error line", "printf 'before\\n'\nfidelity_no_such_command\nprintf 'line %s\\n' \"$LINENO\""}}
		}},
	{name: "m4-options-off", covers: "M4: options the profile turned off (set +B, set +h, shopt -u, unsetopt)", files: optionsOffFiles},
	{name: "m5-unexported", covers: "M5: unexported shell variables: prompts, arrays, HIST*, FUNCNEST, TMOUT, IFS, CDPATH, LC_ALL", files: unexportedFiles},
	{name: "m6-attributes", covers: "M6: readonly, integer, -l/-u, nameref, exported integers, zsh's float, zero-fill, tied and unique", files: attributeFiles},
	{name: "m7-traps", covers: "M7: traps, ignored signals (a child inherits SIG_IGN), ERR and DEBUG traps", files: trapFiles},
	{name: "m7-ulimits", covers: "M7: soft and hard ulimits, and a umask", files: ulimitFiles},
	{name: "m8-cd", covers: "M8: a cd in the profile", files: cdFiles},
	{name: "m8-pushd", covers: "M8: pushd in the profile: the directory stack and OLDPWD", shells: []string{"bash", "zsh"},
		files: withFiles(inLogin("pushd \"$HOME/proj/a\" >/dev/null\npushd \"$HOME/proj/b\" >/dev/null\n"), map[string]string{"proj/a/f": "", "proj/b/f": ""})},
	{name: "m9-rc-twice", covers: "M9: a login file that sources the rc file (or sh's $ENV), which the capture sources again", files: rcTwiceFiles, funcs: []string{"rc_fn"}},
	{name: "m9-rc-only", covers: "M9 (reference rule): only an rc file, which the capture sources and a login shell does not",
		files: func(shell, _ string) map[string]string {
			rc := "export RC_ONLY=1\nrc_fn() { echo rc; }\n"
			switch shell {
			case "bash":
				return map[string]string{".bashrc": rc}
			case "zsh":
				return map[string]string{".zshrc": rc}
			}
			return map[string]string{".shrc": rc}
		},
		env: func(shell, home string) map[string]string {
			if shell == "sh" {
				return map[string]string{"ENV": home + "/.shrc"}
			}
			return nil
		}, funcs: []string{"rc_fn"}},
	{name: "m10-stale-extra", covers: "M10: a file the profile sources (~/.extra) changes after the capture",
		files: withFiles(inLogin(". \"$HOME/.extra\"\n"), map[string]string{".extra": "export EXTRA_VERSION=1\nextra_fn() { echo one; }\nalias extra_alias='echo one'\n"}),
		edit: func(string, string) map[string]string {
			return map[string]string{".extra": "export EXTRA_VERSION=2\nextra_fn() { echo two, longer; }\nalias extra_alias='echo two, longer'\n"}
		}, funcs: []string{"extra_fn"}, probe: map[string]string{"": "printf '@@ call extra_fn\\n'; extra_fn 2>&1 || :\n"}},
	{name: "m10-stale-envrc", covers: "M10: a direnv-like .envrc of the cwd, sourced by the profile, changes after the capture",
		files: withFiles(inLogin("if [ -f \"$PWD/.envrc\" ]; then . \"$PWD/.envrc\"; fi\n"), map[string]string{"work/.envrc": "export PROJECT=alpha\n"}),
		edit: func(string, string) map[string]string {
			return map[string]string{"work/.envrc": "export PROJECT=beta-longer\n"}
		}},
	{name: "m11-functions", covers: "M11: functions of every shape in the login file (dash loses them all)",
		files: inLogin("simple_fn() { echo simple; }\nlocal_fn() { local x=1; echo \"$x\"; }\nrecursive_fn() { if [ \"$1\" -gt 0 ]; then recursive_fn $(($1 - 1)); else echo done; fi; }\nheredoc_fn() {\n  cat <<EOF\nfake () \n{ \n# setopts 9\nEOF\n}\nredirect_fn() { echo to-stderr; } >&2\n"),
		funcs: []string{"simple_fn", "local_fn", "recursive_fn", "heredoc_fn", "redirect_fn"},
		probe: map[string]string{"": "printf '@@ call functions\\n'; { simple_fn; local_fn; recursive_fn 3; } 2>&1 || :\n"}},
	{name: "m12-exit-tail", covers: "M12: a crashing last program, a self-kill, exit 3, and an error's prefix", files: inLogin("export X=1\n"), scripts: crashScripts},

	// Low.
	{name: "low-logout", covers: "low: logout and exit with ~/.bash_logout (~/.zlogout)",
		files: func(shell, _ string) map[string]string {
			return map[string]string{loginFile(shell): "export X=1\n", ".bash_logout": "echo bash_logout ran\n", ".zlogout": "echo zlogout ran\n"}
		},
		scripts: func(string) []fidelityScript {
			return []fidelityScript{{"exit", "printf 'before\\n'; exit 3"}, {"logout", "printf 'before\\n'; logout 4; printf 'after %s\\n' \"$?\""}}
		}},
	{name: "low-exported-specials", covers: "low: exported GLOBIGNORE, CDPATH, SHELLOPTS and BASHOPTS, which bash -p ignores", shells: []string{"bash"},
		files: withFiles(inLogin("export GLOBIGNORE='*.o'\nexport CDPATH=\"$HOME\"\nset -o noclobber\nexport SHELLOPTS\nshopt -s dotglob\nexport BASHOPTS\n"), map[string]string{"proj/f": ""}),
		probe: map[string]string{"bash": "printf '@@ cd via CDPATH\\n'; ( cd proj && pwd ) 2>&1 || :\nprintf '@@ child bash\\n'; /bin/bash -c 'printf \"%s\\n\" \"$SHELLOPTS\" \"$BASHOPTS\" *'\n"}},
	{name: "low-exported-ifs", covers: "low: an exported IFS",
		files: byShell(map[string]string{"bash": "IFS=$' \\t\\n,'\nexport IFS\n", "zsh": "IFS=$' \\t\\n,'\nexport IFS\n", "sh": "IFS=' \t\n,'\nexport IFS\n"})},
	{name: "low-builtin-names", covers: "low: functions named set, alias, builtin, shopt, umask, unalias (setopt for zsh), which the restore calls",
		files: byShell(map[string]string{
			"bash": "CALLS=\nset() { CALLS=\"${CALLS}s\"; builtin set \"$@\"; }\nalias() { CALLS=\"${CALLS}a\"; builtin alias \"$@\"; }\nbuiltin() { CALLS=\"${CALLS}b\"; command builtin \"$@\"; }\nshopt() { CALLS=\"${CALLS}o\"; command shopt \"$@\"; }\numask() { CALLS=\"${CALLS}u\"; command umask \"$@\"; }\nunalias() { CALLS=\"${CALLS}n\"; command unalias \"$@\"; }\nset -o pipefail\nshopt -s expand_aliases\nalias ll='ls -l'\n",
			"zsh":  "CALLS=\nsetopt() { CALLS=\"${CALLS}s\"; builtin setopt \"$@\"; }\nalias() { CALLS=\"${CALLS}a\"; builtin alias \"$@\"; }\numask() { CALLS=\"${CALLS}u\"; builtin umask \"$@\"; }\nunalias() { CALLS=\"${CALLS}n\"; builtin unalias \"$@\"; }\nsetopt PIPE_FAIL\nalias ll='ls -l'\n",
			"sh":   "CALLS=\nalias() { CALLS=\"${CALLS}a\"; command alias \"$@\"; }\numask() { CALLS=\"${CALLS}u\"; command umask \"$@\"; }\nalias ll='ls -l'\n",
		}), funcs: []string{"alias", "umask"}},
	{name: "low-bash-env", covers: "low: BASH_ENV in the request, which bash -lc runs after the profile and bash -p skips", shells: []string{"bash"},
		files: func(string, string) map[string]string {
			return map[string]string{".bash_profile": "export FROM_PROFILE=1\n", ".bashenv": "BASH_ENV_RUNS=\"${BASH_ENV_RUNS:-}x\"\nbenv_fn() { echo benv; }\n", ".bashrc": "export FROM_BASHRC=1\n"}
		},
		env:   func(_, home string) map[string]string { return map[string]string{"BASH_ENV": home + "/.bashenv"} },
		probe: map[string]string{"bash": "printf '@@ child bash\\n'; /bin/bash -c 'printf \"%s\\n\" \"${BASH_ENV_RUNS-unset}\"; type -t benv_fn' 2>&1 || :\n"}},
	{name: "low-non-utf8-env", covers: "low: exported values that are not valid UTF-8",
		files: byShell(map[string]string{
			"bash": "export BAD_BYTES=$'caf\\xe9'\nexport GOOD_UTF8='café'\n",
			"zsh":  "export BAD_BYTES=$'caf\\xe9'\nexport GOOD_UTF8='café'\n",
			"sh":   "BAD_BYTES=$(printf 'caf\\351')\nexport BAD_BYTES\nexport GOOD_UTF8='café'\n",
		})},
	{name: "non-utf8-state", covers: "odd: an alias whose value is not UTF-8, which makes the whole capture fail (fallback)",
		files: byShell(map[string]string{"bash": "alias latin='echo caf\xe9'\nexport X=1\n", "zsh": "alias latin='echo caf\xe9'\nexport X=1\n", "sh": "alias latin='echo caf\xe9'\nexport X=1\n"})},
	{name: "low-completion", covers: "low: completion specs (bash), zsh modules, zstyles and named directories", shells: []string{"bash", "zsh"},
		files: byShell(map[string]string{
			"bash": "complete -W 'start stop' svc\n_mycomp() { COMPREPLY=(); }\ncomplete -F _mycomp mycmd\ncomplete -o nospace -d cdd\n",
			"zsh":  "zmodload zsh/mathfunc\nzstyle ':completion:*' menu select\nzstyle ':fidelity:*' key value\nhash -d proj=\"$HOME/proj\"\n",
		})},
	{name: "low-enable-n", covers: "low: builtins disabled with enable -n (zsh: disable)", shells: []string{"bash", "zsh"},
		files: byShell(map[string]string{"bash": "enable -n test kill\n", "zsh": "disable kill\n"}),
		probe: map[string]string{"bash": "printf '@@ type test\\n'; type -a test 2>&1 || :\n", "zsh": "printf '@@ whence kill\\n'; whence -a kill 2>&1 || :\n"}},
	{name: "low-hash-p", covers: "low: a command hashed by hand (hash -p; zsh: hash name=path)", shells: []string{"bash", "zsh"},
		files: byShell(map[string]string{"bash": "hash -p /bin/echo myecho\n", "zsh": "hash myecho=/bin/echo\n"}),
		probe: map[string]string{"": "printf '@@ type myecho\\n'; type myecho 2>&1 || :\n"}},

	// Odd cases and combinations.
	{name: "nvm-like", covers: "odd: an nvm-like init: NVM_DIR, a sourced nvm.sh of functions, PATH, MANPATH, a completion",
		files: func(shell, _ string) map[string]string {
			login := "export NVM_DIR=\"$HOME/.nvm\"\n[ -s \"$NVM_DIR/nvm.sh\" ] && \\. \"$NVM_DIR/nvm.sh\"\n"
			if shell == "bash" {
				login += "[ -s \"$NVM_DIR/bash_completion\" ] && \\. \"$NVM_DIR/bash_completion\"\n"
			}
			return map[string]string{loginFile(shell): login,
				".nvm/nvm.sh": `nvm_is_zsh() { [ -n "${ZSH_VERSION-}" ]; }
nvm_echo() { command printf %s\\n "$*" 2>/dev/null; }
nvm_cd() { \cd "$@"; }
nvm_ls_current() { nvm_echo "v20.0.0"; }
nvm() {
  if [ "$#" -lt 1 ]; then nvm_echo "Node Version Manager"; return; fi
  case $1 in current) nvm_ls_current ;; *) nvm_echo "nvm: $1" ;; esac
}
NVM_CD_FLAGS=''
if nvm_is_zsh; then NVM_CD_FLAGS="-q"; fi
export NVM_BIN="$NVM_DIR/versions/node/v20.0.0/bin"
export NVM_INC="$NVM_DIR/versions/node/v20.0.0/include/node"
export PATH="$NVM_BIN:$PATH"
export MANPATH="$NVM_DIR/versions/node/v20.0.0/share/man:${MANPATH-}"
`,
				".nvm/bash_completion": "__nvm() { COMPREPLY=(); }\ncomplete -o default -F __nvm nvm\n"}
		}, funcs: []string{"nvm", "nvm_echo"}, probe: map[string]string{"": "printf '@@ nvm current\\n'; nvm current 2>&1 || :\n"}},
	{name: "conda-like", covers: "odd: a conda-like eval \"$(conda shell hook)\" and activate: functions, exports, PS1, PATH, CONDA_SHLVL",
		files: func(shell, _ string) map[string]string {
			name := shell
			if shell == "sh" {
				name = "posix"
			}
			return map[string]string{
				loginFile(shell): fmt.Sprintf("__conda_setup=\"$(\"$HOME/conda/bin/conda\" 'shell.%s' 'hook' 2> /dev/null)\"\nif [ $? -eq 0 ]; then\n  eval \"$__conda_setup\"\nfi\nunset __conda_setup\nconda activate base\n", name),
				"conda/bin/conda": `#!/bin/sh
cat <<'EOF'
export CONDA_EXE="$HOME/conda/bin/conda"
export _CE_M=''
export _CE_CONDA=''
export CONDA_PYTHON_EXE="$HOME/conda/bin/python"
__conda_exe() { "$CONDA_EXE" $_CE_M $_CE_CONDA "$@"; }
__conda_hashr() { hash -r; }
__conda_activate() {
  export CONDA_PREFIX="$HOME/conda"
  export CONDA_DEFAULT_ENV=base
  export CONDA_PROMPT_MODIFIER='(base) '
  export CONDA_SHLVL=1
  PS1="(base) ${PS1-}"
  export PATH="$HOME/conda/bin:$HOME/conda/condabin:$PATH"
  __conda_hashr
}
conda() {
  if [ "$#" -lt 1 ]; then __conda_exe; else
    case "$1" in activate|deactivate) __conda_activate ;; *) __conda_exe "$@" ;; esac
  fi
}
if [ -z "${CONDA_SHLVL+x}" ]; then
  export CONDA_SHLVL=0
  export PATH="$HOME/conda/condabin:$PATH"
fi
EOF
`}
		}, funcs: []string{"conda", "__conda_activate"}},
	{name: "pyenv-like", covers: "odd: a pyenv-like init: PYENV_ROOT, eval \"$(pyenv init -)\", a function, a prompt hook in PROMPT_COMMAND / precmd_functions", shells: []string{"bash", "zsh"},
		files: func(shell, _ string) map[string]string {
			hook := "_pyenv_virtualenv_hook() { local ret=$?; return $ret; }\nif ! [[ \"${PROMPT_COMMAND-}\" =~ _pyenv_virtualenv_hook ]]; then PROMPT_COMMAND=\"_pyenv_virtualenv_hook;${PROMPT_COMMAND-}\"; fi\n"
			if shell == "zsh" {
				hook = "_pyenv_virtualenv_hook() { local ret=$?; return $ret; }\ntypeset -g -a precmd_functions\nif [[ -z $precmd_functions[(r)_pyenv_virtualenv_hook] ]]; then precmd_functions=(_pyenv_virtualenv_hook $precmd_functions); fi\n"
			}
			return map[string]string{
				loginFile(shell):   "export PYENV_ROOT=\"$HOME/.pyenv\"\nexport PATH=\"$PYENV_ROOT/bin:$PATH\"\neval \"$(pyenv init -)\"\n",
				".pyenv/bin/pyenv": "#!/bin/sh\n[ \"$1\" = init ] || exit 0\ncat <<'EOF'\nexport PATH=\"$PYENV_ROOT/shims:${PATH}\"\nexport PYENV_SHELL=" + shell + "\ncommand pyenv rehash 2>/dev/null\npyenv() {\n  local command\n  command=\"${1:-}\"\n  if [ \"$#\" -gt 0 ]; then shift; fi\n  case \"$command\" in\n  activate|deactivate|rehash|shell) eval \"$(pyenv \"sh-$command\" \"$@\")\" ;;\n  *) command pyenv \"$command\" \"$@\" ;;\n  esac\n}\n" + hook + "EOF\n"}
		}},
	{name: "prompts", covers: "odd: prompts with escapes and command substitutions, PROMPT_COMMAND as an array, PS0, zsh prompt_subst and hooks",
		files: byShell(map[string]string{
			"bash": "git_ps1() { printf ' (main)'; }\nPS1='\\[\\e[32m\\]\\u@\\h\\[\\e[0m\\]:\\w$(git_ps1)\\$ '\nPS0='> '\nstarship_precmd() { :; }\nPROMPT_COMMAND=(starship_precmd 'history -a')\n",
			"zsh":  "setopt PROMPT_SUBST\ngit_prompt() { print -n ' (main)'; }\nPROMPT='%F{green}%n%f %~$(git_prompt) %# '\nRPROMPT='%*'\nmy_precmd() { :; }\nautoload -Uz add-zsh-hook\nadd-zsh-hook precmd my_precmd\n",
			"sh":   "PS1='$(whoami)@$(hostname):$PWD\\$ '\n",
		})},
	{name: "arrays", covers: "odd: arrays and associative arrays with spaces, newlines, quotes, globs, empties, sparse indices", shells: []string{"bash", "zsh"},
		files: byShell(map[string]string{
			"bash": "tricky=('a b' $'line1\\nline2' \"it's\" '\"q\"' '*' '' '$HOME')\nsparse=([5]=five [10]=ten)\ndeclare -a empty_arr=()\ndeclare -A assoc=(['key with space']=1 [\"it's\"]=2 ['a]b']=3 [empty]='')\ndeclare -A empty_assoc=()\nexport tricky\n",
			"zsh":  "tricky=('a b' $'line1\\nline2' \"it's\" '\"q\"' '*' '' '$HOME')\ntypeset -a empty_arr\nempty_arr=()\ntypeset -A assoc\nassoc=('key with space' 1 \"it's\" 2 'a]b' 3 empty '')\ntypeset -A empty_assoc\n",
		})},
	{name: "odd-fn-names", covers: "odd: function names with -, ., :, ::, @, +, a digit first, and a non-ASCII letter", shells: []string{"bash", "zsh"}, files: oddNameFiles},
	{name: "posix-mode", covers: "odd: set -o posix in the profile, after functions whose names posix mode refuses", shells: []string{"bash"},
		files: inLogin("function my-fn { echo dash; }\ngreet() { echo hi; }\nshopt -s expand_aliases\nalias ll='ls -l'\nset -o posix\n")},
	{name: "errexit-nounset", covers: "odd: errexit, nounset and pipefail on in the profile",
		files: byShell(map[string]string{"bash": "set -euo pipefail\nf() { :; }\n", "zsh": "setopt ERR_EXIT NO_UNSET PIPE_FAIL\nf() { : }\n", "sh": "set -eu\nf() { :; }\n"}), funcs: []string{"f"}},
	{name: "xtrace", covers: "odd: set -x with a fixed PS4 in the profile (a standby never serves it)",
		files: inLogin("PS4='+ '\nexport X=1\nset -x\n")},
	{name: "allexport", covers: "odd: set -a, so that later assignments are exported",
		files: inLogin("set -a\nLATE_VAR=late\n")},
	{name: "noise", covers: "odd: a profile that prints on stdout and stderr (a replay runs no profile)",
		files: inLogin("echo \"Welcome, $HOME\"\necho 'warning: something' >&2\n")},
	{name: "exit-in-profile", covers: "odd: exit 0 in the profile: the login shell never runs the command; the capture fails",
		files: inLogin("export BEFORE=1\nexit 0\n")},
	{name: "return-in-profile", covers: "odd: return in the middle of the profile",
		files: inLogin("export BEFORE=1\nreturn 0\nexport AFTER=1\n")},
	{name: "positional", covers: "odd: set -- in the profile sets the command's positional parameters; BASH_ARGV0 renames $0",
		files: byShell(map[string]string{"bash": "set -- one 'two words' three\nBASH_ARGV0=renamed\n", "zsh": "set -- one 'two words' three\n", "sh": "set -- one 'two words' three\n"})},
	{name: "background-job", covers: "odd: a background job started and waited for in the profile ($! is set)",
		files: inLogin("( : ) &\nwait\n")},
	{name: "tricky-values", covers: "odd: exported and plain values with newlines, quotes, backslashes, $, =, globs, empties, unicode; getopts state",
		files: byShell(map[string]string{
			"bash": "export SPACEY='a  b'\nexport NL=$'line1\\nline2'\nexport QUOTES=\"it's \\\"q\\\"\"\nexport DOLLAR='$HOME and $(date)'\nexport BACKSLASH='a\\b\\\\c'\nexport EMPTY=\nexport EQ='a=b=c'\nexport GLOBBY='*'\nexport UNICODE='ünïcødé 🚀'\nplain_nl=$'x\\ny'\nwhile getopts ab: opt -a -b x; do :; done\n",
			"zsh":  "export SPACEY='a  b'\nexport NL=$'line1\\nline2'\nexport QUOTES=\"it's \\\"q\\\"\"\nexport DOLLAR='$HOME and $(date)'\nexport BACKSLASH='a\\b\\\\c'\nexport EMPTY=\nexport EQ='a=b=c'\nexport GLOBBY='*'\nexport UNICODE='ünïcødé 🚀'\nplain_nl=$'x\\ny'\nwhile getopts ab: opt -a -b x; do :; done\n",
			"sh":   "export SPACEY='a  b'\nexport NL='line1\nline2'\nexport QUOTES=\"it's \\\"q\\\"\"\nexport DOLLAR='$HOME and $(date)'\nexport BACKSLASH='a\\b\\\\c'\nexport EMPTY=\nexport EQ='a=b=c'\nexport GLOBBY='*'\nexport UNICODE='ünïcødé 🚀'\nplain_nl='x\ny'\nwhile getopts ab: opt -a -b x; do :; done\n",
		})},
	{name: "aliases", covers: "odd: aliases with quotes, newlines, a trailing space, =, an alias of an alias; zsh global and suffix aliases", files: aliasFiles},
	{name: "exported-functions", covers: "odd: export -f in the profile, and an exported function sent in every request (bash -p does not import it)",
		files: byShell(map[string]string{"bash": "greet() { echo hi; }\nexport -f greet\n", "zsh": "greet() { echo hi; }\n", "sh": "greet() { echo hi; }\n"}),
		env: func(string, string) map[string]string {
			return map[string]string{"BASH_FUNC_reqfn%%": "() {  echo from the request\n}"}
		}, funcs: []string{"greet"}},
	{name: "shopt-on", covers: "odd: bash options that change what commands do: lastpipe, nullglob, dotglob, nocaseglob, globstar, xpg_echo, extdebug, history",
		shells: []string{"bash"}, files: inLogin("shopt -s lastpipe nullglob dotglob nocaseglob globstar nocasematch xpg_echo extdebug inherit_errexit\nset -o history -o histexpand\nf() { :; }\n")},
	{name: "command-not-found", covers: "odd: a command_not_found_handle (zsh: _handler) that replaces the not-found error",
		shells: []string{"bash", "zsh"},
		files: byShell(map[string]string{
			"bash": "command_not_found_handle() { printf 'cnf: %s\\n' \"$1\" >&2; return 127; }\n",
			"zsh":  "command_not_found_handler() { print -r \"cnf: $1\" >&2; return 127; }\n",
		})},
	{name: "cd-override", covers: "odd: an rvm-like cd function (zsh: chpwd_functions)", shells: []string{"bash", "zsh"},
		files: byShell(map[string]string{
			"bash": "CD_RUNS=\ncd() { builtin cd \"$@\" && CD_RUNS=\"${CD_RUNS}x\"; }\n",
			"zsh":  "CD_RUNS=\nmy_chpwd() { CD_RUNS=\"${CD_RUNS}x\"; }\nchpwd_functions+=(my_chpwd)\ncd() { builtin cd \"$@\" }\n",
		})},
	{name: "state-injection", covers: "odd: text in a function and an alias that looks like the capture's own markers and chunk variables",
		files: inLogin("injected_fn() {\n  cat <<'EOF'\n# Snapshot file\n# aliases 99\n# setopts 1\nset -o xtrace\n__CODEX_SHELL_SNAPSHOT_STATE_7=x\nEOF\n}\nalias marker='echo \"# setopts 3\"'\n"),
		funcs: []string{"injected_fn"}},
	{name: "big-state", covers: "odd: 250 functions, 100 aliases and 100 exports (a state of several chunks) and a 100 KB export",
		shells: []string{"bash", "zsh"}, files: bigState},
	{name: "debian-skel", covers: "odd: Debian's default ~/.profile and ~/.bashrc (which returns when not interactive)",
		shells: []string{"bash", "sh"},
		files: func(string, string) map[string]string {
			return map[string]string{
				".profile":         "if [ -n \"$BASH_VERSION\" ]; then\n    if [ -f \"$HOME/.bashrc\" ]; then\n\t. \"$HOME/.bashrc\"\n    fi\nfi\nif [ -d \"$HOME/bin\" ] ; then\n    PATH=\"$HOME/bin:$PATH\"\nfi\nif [ -d \"$HOME/.local/bin\" ] ; then\n    PATH=\"$HOME/.local/bin:$PATH\"\nfi\n",
				".bashrc":          "case $- in\n    *i*) ;;\n      *) return;;\nesac\nHISTCONTROL=ignoreboth\nshopt -s histappend\nHISTSIZE=1000\nalias ll='ls -alF'\n",
				"bin/.keep":        "",
				".local/bin/.keep": "",
			}
		}},
	{name: "zsh-newuser", covers: "odd, M9 reference rule: Debian's recommended ~/.zshrc (promptinit, zstyles; compinit left out, whose thousand autoloads would only repeat one difference), which zsh -lc does not read",
		shells: []string{"zsh"},
		files: func(string, string) map[string]string {
			return map[string]string{".zshrc": "autoload -Uz promptinit\npromptinit\nprompt adam1\nsetopt histignorealldups sharehistory\nHISTSIZE=1000\nSAVEHIST=1000\nHISTFILE=~/.zsh_history\nautoload -Uz compinit\nzstyle ':completion:*' menu select=2\n"}
		}},
	{name: "zsh-zdotdir", covers: "odd: ~/.zshenv moves ZDOTDIR; the login files live there", shells: []string{"zsh"},
		files: func(string, string) map[string]string {
			return map[string]string{".zshenv": "export ZDOTDIR=\"$HOME/.config/zsh\"\n", ".config/zsh/.zprofile": "export FROM_ZDOTDIR=1\nzfn() { echo z; }\n", ".config/zsh/.zshrc": "export FROM_ZDOTDIR_RC=1\n"}
		}},
	{name: "zsh-options", covers: "odd: zsh options that change how the command parses (sh_word_split, ksh_arrays, auto_pushd, extended_glob), and typeset -U path", shells: []string{"zsh"},
		files: inLogin("setopt SH_WORD_SPLIT KSH_ARRAYS AUTO_PUSHD EXTENDED_GLOB NO_CLOBBER\ntypeset -U path\npath=(\"$HOME/bin\" $path \"$HOME/bin\")\n")},
	{name: "zsh-emulate-sh", covers: "odd: emulate sh at the end of ~/.zprofile", shells: []string{"zsh"},
		files: inLogin("f() { echo f; }\nemulate sh\n")},
	{name: "kitchen-sink", covers: "combination: plain, options off, unexported, attributes, traps, ulimits, cd, rc twice, aliases, odd names (bash, zsh)",
		files: func(shell, home string) map[string]string {
			gens := []func(string, string) map[string]string{plainFiles, optionsOffFiles, unexportedFiles, attributeFiles, trapFiles, ulimitFiles, aliasFiles, rcTwiceFiles, cdFiles}
			if shell != "sh" {
				gens = append(gens, oddNameFiles)
			}
			return combine(gens...)(shell, home)
		}, funcs: []string{"greet", "rc_fn"}},
}
