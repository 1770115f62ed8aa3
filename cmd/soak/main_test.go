package main

import (
	"bytes"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--time", "0s"},
		{"--time", "nope"},
		{"extra"},
		{"--unknown"},
	} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 2 || errb.Len() == 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and a message", args, code, errb.String())
		}
	}
	t.Setenv("SOAK_TIME", "ten minutes")
	var out, errb bytes.Buffer
	if code := run(nil, &out, &errb); code != 2 || !strings.Contains(errb.String(), "SOAK_TIME") {
		t.Errorf("bad SOAK_TIME: exit %d, stderr %q", code, errb.String())
	}
}
