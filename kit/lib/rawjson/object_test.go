package rawjson

import (
	"encoding/json"
	"reflect"
	"testing"
)

// Object writes back what Members read, less the members set to nil, and
// a key that needs escaping is escaped.
func TestObjectWritesMembersBack(t *testing.T) {
	t.Parallel()
	obj := []byte(`{"a":1, "b" : {"c":[true,null]},"q\"uote\u00e9":"x","drop":2}`)
	members, ok := Members(nil, obj)
	if !ok {
		t.Fatal("not an object")
	}
	members[3].Value = nil
	var got, want any
	if err := json.Unmarshal(Object(members), &got); err != nil {
		t.Fatalf("%s: %v", Object(members), err)
	}
	_ = json.Unmarshal([]byte(`{"a":1,"b":{"c":[true,null]},"q\"uoteé":"x"}`), &want)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Object = %s", Object(members))
	}
	if string(Object(nil)) != "{}" {
		t.Fatalf("no members: %s", Object(nil))
	}
}
