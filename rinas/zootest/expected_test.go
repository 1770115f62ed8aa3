package zootest

import "github.com/pagefeed/pagefeed/internal/zoo"

// zooReasons are the known reasons a zoo case fails, matched by the text
// of its error when a failing run suggests a new table (none is expected
// today: every case passes at the defaults).
var zooReasons []zoo.Reason

// zooExpectedFailures are the cases of TestZooAtDefaults that fail today:
// the to-do list, empty now. The test holds it to account both ways
// (zoo.Expectations): a case a pattern matches must fail with its
// reason's text in the error, so whoever fixes it deletes or narrows the
// entry; every other case must pass; every pattern must match a case.
// Patterns are path.Match globs over the case names,
// DATASET/SHUFFLE/COLUMNS/WORLD; the first that matches counts. A failing
// run logs the table its outcomes make.
var zooExpectedFailures = []zoo.Expected{}
