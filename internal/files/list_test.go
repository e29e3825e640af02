package files

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestList(t *testing.T) {
	fx := newFixture(t, Options{MaxListEntries: 3})
	for _, name := range []string{"b", "a", "C", "d/x", "e"} {
		writeFile(t, fx.in(name), name)
	}
	if err := os.Symlink("/etc", fx.in("link")); err != nil {
		t.Fatal(err)
	}
	var got []string
	cursor := ""
	for range 10 {
		page, err := fx.fs.List(fx.root, cursor, 0) // 0: the maximum, 3
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Entries) > 3 {
			t.Errorf("a page of %d entries, want at most 3", len(page.Entries))
		}
		for _, e := range page.Entries {
			got = append(got, e.Rel+":"+string(e.Type))
			if e.Path != fx.in(e.Rel) {
				t.Errorf("entry %s has path %s", e.Rel, e.Path)
			}
		}
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	want := []string{"C:file", "a:file", "b:file", "d:directory", "e:file", "link:symlink"}
	if !slices.Equal(got, want) {
		t.Errorf("List pages = %q, want %q", got, want)
	}
	// A cursor that names no entry resumes after where it would be.
	page, err := fx.fs.List(fx.root, "c", 2)
	if err != nil || len(page.Entries) != 2 || page.Entries[0].Rel != "d" {
		t.Errorf("List(cursor c, 2) = %+v, %v; want d and e", page, err)
	}
	_, err = fx.fs.List(fx.in("a"), "", 0)
	wantErr(t, "List(file)", err, ErrNotADirectory)
	_, err = fx.fs.List(fx.in("missing"), "", 0)
	wantErr(t, "List(missing)", err, ErrNotFound)
}

func TestWalk(t *testing.T) {
	fx := newFixture(t, Options{MaxWalkDepth: 3})
	for _, name := range []string{"a/b/c/d/deep", "a/b/f", "a/g", "b", "c/x", "a-b"} {
		writeFile(t, fx.in(name), name)
	}
	if err := os.Symlink(fx.outside, fx.in("a/out")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, fx.outside+"/never", "")
	all, err := fx.fs.Walk(fx.root, WalkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range all.Entries {
		got = append(got, e.Rel)
	}
	// Depth 3 at most (the server's bound); "a" before "a-b", each directory
	// before its entries; the symlink is an entry, not a way down.
	want := []string{"a", "a/b", "a/b/c", "a/b/f", "a/g", "a/out", "a-b", "b", "c", "c/x"}
	if !slices.Equal(got, want) || all.Next != "" {
		t.Fatalf("Walk = %q, next %q; want %q", got, all.Next, want)
	}
	for _, limit := range []int{1, 2, 3, 4} {
		var paged []string
		cursor := ""
		for range 20 {
			page, err := fx.fs.Walk(fx.root, WalkOptions{Cursor: cursor, Limit: limit})
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range page.Entries {
				paged = append(paged, e.Rel)
			}
			if cursor = page.Next; cursor == "" {
				break
			}
		}
		if !slices.Equal(paged, want) {
			t.Errorf("Walk in pages of %d = %q, want %q", limit, paged, want)
		}
	}
	shallow, err := fx.fs.Walk(fx.in("a"), WalkOptions{MaxDepth: 1})
	if err != nil || len(shallow.Entries) != 3 || shallow.Entries[0].Path != fx.in("a/b") {
		t.Errorf("Walk(a, depth 1) = %+v, %v; want b, g and out", shallow, err)
	}
	for _, e := range all.Entries {
		if strings.Contains(e.Rel, "never") {
			t.Errorf("the walk followed the symlink out to %s", e.Rel)
		}
	}
}

// TestNamesNotUTF8: a Linux name is any bytes but "/" and NUL, and need not
// be UTF-8. Such names are listed and walked once each, in byte order, and
// the pages end, however small: a cursor is text that a client sends back
// through JSON and a URL, which turn a name's invalid bytes into U+FFFD
// (which sorts before them, so that a cursor of the name itself repeated its
// page forever). A cursor names each entry exactly, in UTF-8; one of a UTF-8
// name is the name itself, as it always was.
func TestNamesNotUTF8(t *testing.T) {
	fx := newFixture(t, Options{})
	for _, name := range []string{"a", "bad\xfename", "bad\xffname", "bad\ufffdname", "z", "\xff", "\xff\xfe/x", "\xff\xfe/\xc0"} {
		writeFile(t, fx.in(name), name)
	}
	// What a client gets back of a cursor: JSON, as text.
	viaJSON := func(s string) string {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var out string
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	top := []string{"a", "bad\ufffdname", "bad\xfename", "bad\xffname", "z", "\xff", "\xff\xfe"}
	tree := []string{"a", "bad\ufffdname", "bad\xfename", "bad\xffname", "z", "\xff", "\xff\xfe", "\xff\xfe/x", "\xff\xfe/\xc0"}
	for _, limit := range []int{1, 2, 3} {
		for _, op := range []struct {
			name string
			page func(cursor string) (Page, error)
			want []string
		}{
			{"List", func(c string) (Page, error) { return fx.fs.List(fx.root, c, limit) }, top},
			{"Walk", func(c string) (Page, error) { return fx.fs.Walk(fx.root, WalkOptions{Cursor: c, Limit: limit}) }, tree},
		} {
			var got []string
			cursor := ""
			for range 2 * len(op.want) {
				page, err := op.page(cursor)
				if err != nil {
					t.Fatalf("%s(cursor %q) = %v", op.name, cursor, err)
				}
				for _, e := range page.Entries {
					got = append(got, e.Rel)
				}
				if !utf8.ValidString(page.Next) {
					t.Errorf("%s gave the cursor %q, which is not UTF-8", op.name, page.Next)
				}
				if cursor = viaJSON(page.Next); cursor == "" {
					break
				}
			}
			if !slices.Equal(got, op.want) || cursor != "" {
				t.Errorf("%s in pages of %d = %q (last cursor %q), want %q, once each, and an end", op.name, limit, got, cursor, op.want)
			}
		}
	}
	if page, err := fx.fs.List(fx.root, "", 1); err != nil || page.Next != "a" {
		t.Errorf("List's cursor after a = %q, %v; want the name itself", page.Next, err)
	}
	if page, err := fx.fs.Walk(fx.in("\xff\xfe"), WalkOptions{Limit: 1}); err != nil || len(page.Entries) != 1 || page.Entries[0].Rel != "x" || page.Next != "x" {
		t.Errorf("Walk of a directory whose name is not UTF-8 = %+v, %v; want x, then its cursor x", page, err)
	}
	// A cursor the server never gives is refused, not taken for a place.
	for _, cursor := range []string{"/", "a//", "/!!", "/YS9i" /* a/b */, "/YQA" /* a and NUL */, "a/b"} {
		_, err := fx.fs.List(fx.root, cursor, 0)
		wantErr(t, "List(cursor "+cursor+")", err, ErrInvalidCursor)
	}
	for _, cursor := range []string{"/", "a//", "//", "/!!", "/YS9i"} {
		_, err := fx.fs.Walk(fx.root, WalkOptions{Cursor: cursor})
		wantErr(t, "Walk(cursor "+cursor+")", err, ErrInvalidCursor)
	}
}
