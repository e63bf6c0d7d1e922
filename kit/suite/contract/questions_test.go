package contract

import "testing"

// Only params whose _meta says answers true say the driver answers.
func TestAnswersReadsTheDriversFlag(t *testing.T) {
	for params, want := range map[string]bool{
		`{"_meta":{"run.switchboard/answers":true}}`:                     true,
		`{"inputResponses":{},"_meta":{"run.switchboard/answers":true}}`: true,
		`{"_meta":{"run.switchboard/answers":false}}`:                    false,
		`{"_meta":{"run.switchboard/answers":"true"}}`:                   false,
		`{"_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}`:    false,
		``:  false,
		`[`: false,
	} {
		if got := Answers(params); got != want {
			t.Errorf("Answers(%q) = %v; want %v", params, got, want)
		}
	}
}
