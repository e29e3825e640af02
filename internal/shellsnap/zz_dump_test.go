package shellsnap

import (
	"os"
	"testing"
)

func TestZZDumpFiles(t *testing.T) {
	f := &SessionFiles{}
	defer f.Close()
	home := "/tmp/sp"
	var st *SessionState
	for _, script := range []string{". /tmp/sp/profile.sh", "cd /tmp"} {
		_, _, _, next, err := sessionRun(t, f, home, st, script)
		if err != nil {
			t.Fatal(err)
		}
		st = next
	}
	c, err := f.Command(SessionLaunch{Shell: Shell{Name: "bash", Path: "/bin/bash"}, Env: loginEnv(home), Script: "cd", State: st})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(c.end)
	os.WriteFile("/tmp/sp/end.sh", b, 0o644)
	os.WriteFile("/tmp/sp/scratch", nil, 0o644)
	r, _ := st.restoreFile(f)
	b, _ = os.ReadFile(r)
	os.WriteFile("/tmp/sp/restore.sh", b, 0o644)
}
