package project

import (
	"slices"
	"strings"
	"testing"
)

// TestParseJobFileLocal: inputs may name local files and a module makes
// a WASM job; URL inputs keep their place among them.
func TestParseJobFileLocal(t *testing.T) {
	for _, c := range []struct {
		name, file string
		files      []string
		module     string
	}{
		{"module only", "app: mandel\nmodule: m.wasm\n", nil, "m.wasm"},
		{"file inputs", "app: a\ninputs: [{file: a.bin}, {file: /abs/b.bin}]\n", []string{"a.bin", "/abs/b.bin"}, ""},
		{"mixed", "app: a\nmodule: w/x.wasm\ninputs:\n  - url: https://x/y\n    sha256: " + strings.Repeat("ab", 32) + "\n  - file: c.bin\n",
			[]string{"", "c.bin"}, "w/x.wasm"},
		{"json", `{"app": "a", "module": "m.wasm", "inputs": [{"file": "a.bin"}]}`, []string{"a.bin"}, "m.wasm"},
	} {
		units, _, err := ParseJobFile([]byte(c.file), "lhc")
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		u := units[0]
		if !slices.Equal(u.InputFiles, c.files) || u.ModuleFile != c.module || len(u.Inputs) != max(len(c.files), len(u.Inputs)) {
			t.Errorf("%s: files %q module %q, want %q %q", c.name, u.InputFiles, u.ModuleFile, c.files, c.module)
		}
		for i, f := range u.InputFiles {
			if f != "" && (u.Inputs[i].URL != "" || u.Inputs[i].Blob != nil) {
				t.Errorf("%s: input %d from a file has %+v before upload", c.name, i, u.Inputs[i])
			}
		}
	}
}

// TestParseJobFileLocalErrors: each mistake in a local input or module
// gets one line naming the field and its line.
func TestParseJobFileLocalErrors(t *testing.T) {
	for _, c := range []struct{ name, file, mention string }{
		{"file and url", "app: a\ninputs:\n  - file: a.bin\n    url: https://x\n", "inputs[0]: line 3: give a file or a url"},
		{"file and sha256", "app: a\ninputs: [{file: a.bin, sha256: ab}]\n", "inputs[0]: line 2: give a file or a url"},
		{"file not a string", "app: a\ninputs: [{file: [a]}]\n", "inputs[0]: line 2: want file, url"},
		{"empty input", "app: a\ninputs: [{}]\n", "inputs[0]: want a file, or a url"},
		{"unknown input field", "app: a\ninputs: [{path: a.bin}]\n", `inputs[0]: line 2: unknown field "path"`},
		{"module not wasm", "app: a\nmodule: m.so\n", "module: line 2: want the path of a WebAssembly file ending in .wasm"},
		{"module a list", "app: a\nmodule: [m.wasm]\n", "module: line 2: want the path"},
		{"module empty", "app: a\nmodule: \"\"\n", "module: line 2"},
		{"module without app", "module: m.wasm\n", "no app"},
	} {
		_, _, err := ParseJobFile([]byte(c.file), "")
		switch {
		case err == nil:
			t.Errorf("%s: accepted, want an error mentioning %q", c.name, c.mention)
		case !strings.Contains(err.Error(), c.mention) || strings.Contains(err.Error(), "\n"):
			t.Errorf("%s: %q, want one line mentioning %q", c.name, err, c.mention)
		}
	}
}

// TestParseJobFileSweepsFiles: a sweep parameter may name the input
// file, one per unit; a placeholder no parameter fills is an error.
func TestParseJobFileSweepsFiles(t *testing.T) {
	units, copies, err := ParseJobFile([]byte("app: digest\nmodule: m.wasm\nargs: [input0]\ncopies: 2\ninputs: [{file: \"data/part{f}.bin\"}]\nsweep:\n  f: {from: 1, to: 3}\n"), "p")
	if err != nil || copies != 2 || len(units) != 3 {
		t.Fatalf("%d units, %d copies, %v", len(units), copies, err)
	}
	for i, u := range units {
		if want := []string{"data/part" + string(rune('1'+i)) + ".bin"}; !slices.Equal(u.InputFiles, want) {
			t.Errorf("unit %d files %q, want %q", i, u.InputFiles, want)
		}
	}
	_, _, err = ParseJobFile([]byte("app: a\nargs: [\"{x}\"]\ninputs: [{file: \"p{y}.bin\"}]\nsweep:\n  x: [1, 2]\n"), "p")
	if err == nil || !strings.Contains(err.Error(), `inputs[0]: file "p{y}.bin" names a parameter`) {
		t.Fatalf("undefined placeholder in a file: %v", err)
	}
}

// TestParseJobFileIO: stdin names an input by index and outputs plain
// file names; each mistake is one line naming the field.
func TestParseJobFileIO(t *testing.T) {
	units, _, err := ParseJobFile([]byte("app: tee\nmodule: m.wasm\ninputs: [{file: a.bin}, {file: b.bin}]\nstdin: 1\noutputs: [out.txt, log_2.txt]\n"), "p")
	if err != nil || units[0].Stdin != 2 || !slices.Equal(units[0].Outputs, []string{"out.txt", "log_2.txt"}) {
		t.Fatalf("parsed %+v, %v", units, err)
	}
	for _, c := range []struct{ name, file, mention string }{
		{"stdin past the inputs", "app: a\ninputs: [{file: a.bin}]\nstdin: 1\n", "stdin: input 1 of 1"},
		{"stdin without inputs", "app: a\nstdin: 0\n", "stdin: input 0 of 0"},
		{"output path", "app: a\noutputs: [d/x]\n", `outputs[0]: "d/x"`},
		{"output twice", "app: a\noutputs: [x, x]\n", `outputs[1]: "x" named twice`},
	} {
		_, _, err := ParseJobFile([]byte(c.file), "")
		if err == nil || !strings.Contains(err.Error(), c.mention) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line mentioning %q", c.name, err, c.mention)
		}
	}
}
