// Package pages is how the registry pages a listing (ListClients,
// ListTools): the page size's default and maximum, the byte bound of one
// page, and the page token — an opaque cursor naming the listing it belongs
// to and the last key it returned, so the next page starts after it however
// the workspace changed meanwhile.
package pages

import (
	"encoding/base64"
	"fmt"
	"strings"
)

// Page sizes: what 0 asks for, and the most one page holds.
const (
	DefaultSize = 100
	MaxSize     = 1000
)

// MaxBytes bounds one page in bytes as well: a page ends once it holds this
// much (but always holds one item), so a page of large tool sets still fits
// one message with room to spare.
const MaxBytes = 4 << 20

// Size reads a requested page size: 0 is DefaultSize, and more than MaxSize
// is MaxSize (the listing says where to go on); a negative size is refused.
func Size(requested int32) (int, error) {
	switch {
	case requested < 0:
		return 0, fmt.Errorf("page_size %d is negative: send 0 for the default (%d), or up to %d", requested, DefaultSize, MaxSize)
	case requested == 0:
		return DefaultSize, nil
	case requested > MaxSize:
		return MaxSize, nil
	}
	return int(requested), nil
}

// Listing names what is paged, so a token of one listing is refused by
// another.
type Listing string

// The listings the registry pages.
const (
	Clients Listing = "clients"
	Tools   Listing = "tools"
)

// version marks the token's layout; a token of another layout is refused.
const version = "p1"

// Token is the cursor after key in listing of workspace.
func Token(listing Listing, workspace, key string) string {
	raw := strings.Join([]string{version, string(listing), workspace, key}, "\x00")
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

// After reads token as a cursor of listing of workspace and returns the
// key the next page starts after; the empty token starts at the beginning
// (""). A token this registry did not give for that listing is refused with
// a sentence.
func After(token string, listing Listing, workspace string) (string, error) {
	if token == "" {
		return "", nil
	}
	refuse := func() (string, error) {
		return "", fmt.Errorf("page_token %s is not one this registry gave for the %s of workspace %q; list again without a page_token to start over", short(token), listing, workspace)
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(token)
	if err != nil {
		return refuse()
	}
	parts := strings.Split(string(raw), "\x00")
	// Only the one spelling Token writes is taken: the decoder also skips
	// line breaks, and a token is read back exactly or not at all.
	if len(parts) != 4 || parts[0] != version || parts[1] != string(listing) || parts[2] != workspace || parts[3] == "" ||
		Token(listing, workspace, parts[3]) != token {
		return refuse()
	}
	return parts[3], nil
}

// short quotes a token for a sentence, cut if it is long.
func short(token string) string {
	if len(token) > 48 {
		return fmt.Sprintf("%q…", token[:48])
	}
	return fmt.Sprintf("%q", token)
}
