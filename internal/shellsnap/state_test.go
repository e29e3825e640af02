package shellsnap

import (
	"reflect"
	"testing"
)

// TestForStandbyKeepsEveryField: a standby shell restores ForStandby's copy
// of a snapshot and gets its environment and names from it, so every field
// but the restore file must come over, those added later included.
func TestForStandbyKeepsEveryField(t *testing.T) {
	var s Snapshot
	v := reflect.ValueOf(&s).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		reflect.NewAt(f.Type(), f.Addr().UnsafePointer()).Elem().Set(filled(t, v.Type().Field(i).Name, f.Type()))
	}
	c := s.ForStandby()
	if c.restore != s.standby {
		t.Errorf("ForStandby().restore = %q, want the standby's file %q", c.restore, s.standby)
	}
	cv := reflect.ValueOf(c).Elem()
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		got, want := cv.Field(i), v.Field(i)
		if name != "restore" && !reflect.DeepEqual(reflect.NewAt(got.Type(), got.Addr().UnsafePointer()).Elem().Interface(), reflect.NewAt(want.Type(), want.Addr().UnsafePointer()).Elem().Interface()) {
			t.Errorf("ForStandby().%s differs from the snapshot's", name)
		}
	}
}

// filled returns a value of type typ that is not its zero, from name.
func filled(t *testing.T, name string, typ reflect.Type) reflect.Value {
	t.Helper()
	v := reflect.New(typ).Elem()
	switch typ.Kind() {
	case reflect.String:
		v.SetString(name)
	case reflect.Int:
		v.SetInt(int64(len(name)))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Map:
		m := reflect.MakeMap(typ)
		m.SetMapIndex(filled(t, name, typ.Key()), filled(t, name, typ.Elem()))
		v.Set(m)
	case reflect.Struct:
		for i := range typ.NumField() {
			f := v.Field(i)
			reflect.NewAt(f.Type(), f.Addr().UnsafePointer()).Elem().Set(filled(t, name+"."+typ.Field(i).Name, f.Type()))
		}
	case reflect.Slice:
		v.Set(reflect.Append(reflect.MakeSlice(typ, 0, 1), filled(t, name, typ.Elem())))
	case reflect.Pointer:
		v.Set(reflect.New(typ.Elem()))
		v.Elem().Set(filled(t, name, typ.Elem()))
	default:
		t.Fatalf("Snapshot.%s is a %s: teach filled to fill it", name, typ.Kind())
	}
	return v
}
