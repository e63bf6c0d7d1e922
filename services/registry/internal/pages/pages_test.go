package pages

import (
	"strings"
	"testing"
)

func TestSize(t *testing.T) {
	t.Parallel()
	for in, want := range map[int32]int{0: DefaultSize, 1: 1, MaxSize: MaxSize, MaxSize + 1: MaxSize, 1 << 30: MaxSize} {
		if got, err := Size(in); err != nil || got != want {
			t.Errorf("Size(%d) = %d, %v; want %d", in, got, err, want)
		}
	}
	if _, err := Size(-1); err == nil || err.Error() != "page_size -1 is negative: send 0 for the default (100), or up to 1000" {
		t.Errorf("Size(-1): %v", err)
	}
}

func TestTokensRoundTripAndBindToTheirListing(t *testing.T) {
	t.Parallel()
	tok := Token(Tools, "dev", "laptop_grep")
	if after, err := After(tok, Tools, "dev"); err != nil || after != "laptop_grep" {
		t.Fatalf("After(Token) = %q, %v", after, err)
	}
	if after, err := After("", Clients, "dev"); err != nil || after != "" {
		t.Fatalf("the empty token: %q, %v", after, err)
	}
	for _, tc := range []struct {
		token     string
		listing   Listing
		workspace string
	}{
		{tok, Clients, "dev"}, // another listing
		{tok, Tools, "ops"},   // another workspace
		{"not base64!", Tools, "dev"},
		{tok + "=", Tools, "dev"}, // padded
		{Token(Tools, "dev", ""), Tools, "dev"},
		{strings.Repeat("A", 100), Tools, "dev"},
	} {
		_, err := After(tc.token, tc.listing, tc.workspace)
		if err == nil || !strings.HasPrefix(err.Error(), "page_token ") ||
			!strings.HasSuffix(err.Error(), "is not one this registry gave for the "+string(tc.listing)+" of workspace \""+tc.workspace+"\"; list again without a page_token to start over") {
			t.Errorf("After(%q, %s, %s) = %v", tc.token, tc.listing, tc.workspace, err)
		}
	}
}

// FuzzAfter: the page token decoder never panics; what it accepts names a
// key, and the token of that key reads back the same.
func FuzzAfter(f *testing.F) {
	for _, s := range []string{"", Token(Clients, "default", "laptop"), Token(Tools, "default", "a_b"), "cDEAY2xpZW50cwBkZWZhdWx0AA", "!!", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, token string) {
		after, err := After(token, Clients, "default")
		if err != nil || token == "" {
			return
		}
		if after == "" || Token(Clients, "default", after) != token {
			t.Fatalf("After(%q) = %q, whose token is %q", token, after, Token(Clients, "default", after))
		}
	})
}
