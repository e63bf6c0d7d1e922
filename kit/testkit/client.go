package testkit

import "net/http"

// HTTP is the tests' HTTP client. Its transport is not
// http.DefaultTransport, whose idle connections httptest.Server.Close
// closes while a parallel test may be taking one.
var HTTP = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
