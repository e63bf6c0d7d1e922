package envflag

import (
	"io"
	"slices"
	"strings"
	"testing"
)

func TestFlagsFallBackToTheEnvironment(t *testing.T) {
	t.Parallel()
	env := map[string]string{"SWITCHBOARD_LISTEN": "127.0.0.1:1", "SWITCHBOARD_DATA_DIR": "/env", "SWITCHBOARD_DEV": "true"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }

	fs := NewFlagSet("x", io.Discard)
	listen := fs.String("listen", "127.0.0.1:7737", "")
	data := fs.String("data-dir", "", "")
	dev := fs.Bool("dev", false, "")
	if err := Parse(fs, []string{"--data-dir", "/flag"}, lookup); err != nil {
		t.Fatal(err)
	}
	if *listen != "127.0.0.1:1" || *data != "/flag" || !*dev {
		t.Fatalf("listen=%q data=%q dev=%v: want env for unset flags, the flag where given", *listen, *data, *dev)
	}
}

func TestBadEnvironmentValueNamesTheVariable(t *testing.T) {
	t.Parallel()
	fs := NewFlagSet("x", io.Discard)
	fs.Int("max", 1, "")
	err := Parse(fs, nil, func(k string) (string, bool) { return "lots", k == "SWITCHBOARD_MAX" })
	if err == nil || !strings.Contains(err.Error(), `SWITCHBOARD_MAX="lots"`) {
		t.Fatalf("err = %v", err)
	}
}

func TestPositionalArgumentsAreRefused(t *testing.T) {
	t.Parallel()
	fs := NewFlagSet("x", io.Discard)
	err := Parse(fs, []string{"stray"}, func(string) (string, bool) { return "", false })
	if err == nil || !strings.Contains(err.Error(), `unexpected argument "stray"`) {
		t.Fatalf("err = %v", err)
	}
}

func TestListTrimsAndDropsEmptyItems(t *testing.T) {
	t.Parallel()
	for in, want := range map[string][]string{"": nil, " , ": nil, "a": {"a"}, " a , b,,c ": {"a", "b", "c"}} {
		if got := List(in); !slices.Equal(got, want) {
			t.Errorf("List(%q) = %q; want %q", in, got, want)
		}
	}
}
