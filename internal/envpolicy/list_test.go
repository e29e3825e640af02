package envpolicy

import (
	"reflect"
	"testing"
)

func TestListRoundTrip(t *testing.T) {
	vars := map[string]string{"B": "2", "A": "x=y", "EMPTY": ""}
	list := List(vars)
	if want := []string{"A=x=y", "B=2", "EMPTY="}; !reflect.DeepEqual(list, want) {
		t.Errorf("List(%v) = %q, want %q", vars, list, want)
	}
	if got := FromList(append(list, "B=3", "noequals", "=v")); !reflect.DeepEqual(got, map[string]string{"A": "x=y", "B": "3", "EMPTY": ""}) {
		t.Errorf("FromList() = %v, want the later B and no malformed pairs", got)
	}
	if List(nil) == nil {
		t.Errorf("List(nil) = nil, want an empty non-nil list")
	}
}
