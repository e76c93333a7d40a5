package client

// DeadlineEvery lets the tests check a running job's deadline often.
var DeadlineEvery = &deadlineEvery
