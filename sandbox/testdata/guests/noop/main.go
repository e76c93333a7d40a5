// Command noop does nothing: the start-up cost of a Go guest.
package main

func main() {}
