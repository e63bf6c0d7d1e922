package tour

import "testing"

func TestStepsAndMatching(t *testing.T) {
	t.Parallel()
	md := "text\n```console\n$ a &\n$ b\nline one\n\n  two  words\n```\n```sh\n$ not this\n```\n"
	steps := Steps(md)
	if len(steps) != 2 || !steps[0].Background() || steps[1].Command != "b" || len(steps[1].Want) != 2 {
		t.Fatalf("steps = %+v", steps)
	}
	if !Matches(`{"id":"inv-…"}`, `x {"id":"inv-12ab"} y`) || Matches("two words", "two") || !Matches("a  b", "a     b") {
		t.Fatal("Matches is wrong")
	}
}

func TestABackgroundStepNamesTheAddressItListensOn(t *testing.T) {
	t.Parallel()
	for cmd, want := range map[string]string{
		"bin/petstore --listen 127.0.0.1:8090 &": "127.0.0.1:8090",
		"bin/switchboard host --dev &":           "",
		"bin/x --listen":                         "",
	} {
		if got := (Step{Command: cmd}).Listens(); got != want {
			t.Errorf("Listens(%q) = %q, want %q", cmd, got, want)
		}
	}
}
