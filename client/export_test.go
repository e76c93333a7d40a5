package client

// DeadlineEvery lets the tests check a running job's deadline often.
var DeadlineEvery = &deadlineEvery

// MaxRevealing lets the tests keep every job in its slot while it waits
// to reveal (0), as before slots were freed.
var MaxRevealing = &maxRevealing

// BreakStalls lets the tests turn off the early reveal at the quota.
var BreakStalls = &breakStalls
