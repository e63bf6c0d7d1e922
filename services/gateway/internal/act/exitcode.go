package act

import (
	"errors"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// maxNumberText bounds the exit_code text worth parsing exactly: an int32
// written any longer is padding, and parsing megabytes of digits is work an
// attacker chooses.
const maxNumberText = 64

// exitCode reads a capture's exit_code, a JSON number (already known to be
// one) that must be an integer within int32. An integer written with a
// fraction of zeros or an exponent ("1.0", "1e2") is still an integer.
func exitCode(text string) (int32, error) {
	n, err := strconv.ParseInt(text, 10, 32)
	if err == nil {
		return int32(n), nil
	}
	if errors.Is(err, strconv.ErrRange) || len(text) > maxNumberText {
		return 0, outOfRange(text)
	}
	mant, exp, hasExp := strings.Cut(strings.ToLower(text), "e")
	if hasExp && len(strings.TrimLeft(exp, "+-")) > 3 {
		// |exponent| ≥ 1000: zero stays zero; anything else is tiny or huge.
		switch {
		case strings.Trim(mant, "-0.") == "":
			return 0, nil
		case strings.HasPrefix(exp, "-"):
			return 0, notInteger(text)
		}
		return 0, outOfRange(text)
	}
	r, ok := new(big.Rat).SetString(text)
	if !ok || !r.IsInt() {
		return 0, notInteger(text)
	}
	if !r.Num().IsInt64() || r.Num().Int64() < math.MinInt32 || r.Num().Int64() > math.MaxInt32 {
		return 0, outOfRange(text)
	}
	return int32(r.Num().Int64()), nil
}

func outOfRange(text string) error {
	if len(text) > maxNumberText {
		text = text[:maxNumberText] + "…"
	}
	return refuse("capture: exit_code %s out of range", text)
}

func notInteger(text string) error {
	return refuse("capture: exit_code %s is not an integer", text)
}
