package shellsnap

import (
	"reflect"
	"testing"
)

// TestWithStateKeepsEveryField: a standby shell restores WithState's copy
// of a snapshot and gets its environment from it, so every exported field
// but State must come over, those added later included.
func TestWithStateKeepsEveryField(t *testing.T) {
	var s Snapshot
	v := reflect.ValueOf(&s).Elem()
	for i := range v.NumField() {
		if f := v.Type().Field(i); f.IsExported() {
			fillValue(t, f.Name, v.Field(i))
		}
	}
	c := s.WithState("# Snapshot file\nother\n")
	if c.State != "# Snapshot file\nother\n" {
		t.Errorf("WithState().State = %q, want the new state", c.State)
	}
	cv := reflect.ValueOf(c).Elem()
	for i := range v.NumField() {
		if f := v.Type().Field(i); f.IsExported() && f.Name != "State" && !reflect.DeepEqual(cv.Field(i).Interface(), v.Field(i).Interface()) {
			t.Errorf("WithState().%s = %v, want %v", f.Name, cv.Field(i).Interface(), v.Field(i).Interface())
		}
	}
}

// fillValue sets v, a field of Snapshot, to a value that is not its zero.
func fillValue(t *testing.T, name string, v reflect.Value) {
	t.Helper()
	switch v.Kind() {
	case reflect.String:
		v.SetString(name)
	case reflect.Int:
		v.SetInt(int64(len(name)))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		key, elem := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fillValue(t, name, key)
		fillValue(t, name, elem)
		m.SetMapIndex(key, elem)
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			fillValue(t, name+"."+v.Type().Field(i).Name, v.Field(i))
		}
	case reflect.Slice:
		elem := reflect.New(v.Type().Elem()).Elem()
		fillValue(t, name, elem)
		v.Set(reflect.Append(reflect.MakeSlice(v.Type(), 0, 1), elem))
	default:
		t.Fatalf("Snapshot.%s is a %s: teach fillValue to fill it", name, v.Kind())
	}
}
