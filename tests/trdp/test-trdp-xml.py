#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-trdp-xml.py TRDP_DUMP SRCDIR [--reference DIR] - trdp/xml.c's
errors and what it reads.  Each bad file below (written here, one case
each) must be refused with "file:line:column: what", the line and column
those of the tag at fault (found in the text by its needle); the good ones
must load with the telegrams, plans and counts given.  --reference DIR
also loads the TCNopen stack's example files fetched there (never
committed): all but the two the reference's rules refuse must load.
"""
import os
import shlex
import subprocess
import sys
import tempfile

HEAD = '<?xml version="1.0"?>\n<device>\n<bus-interface-list><bus-interface name="eth0">\n'
MID = '</bus-interface></bus-interface-list>\n<data-set-list>\n'
TAIL = '</data-set-list>\n</device>\n'
DS = '<data-set name="ds" id="1001">\n<element name="a" type="UINT8"/>\n</data-set>\n'


def doc(telegrams, datasets):
    return HEAD + telegrams + MID + datasets + TAIL


TEL = '<telegram name="t" com-id="1" data-set-id="1001"/>\n'
# (what, text, needle (the tag at fault), message)
BAD = [
    ("unknown type", doc(TEL, '<data-set id="1001">\n<element name="a" type="UINT12"/>\n</data-set>\n'),
     '<element name="a" type="UINT12"', 'element "a": type "UINT12" is no type and no data set'),
    ("reserved type number", doc(TEL, '<data-set id="1001">\n<element name="a" type="28"/>\n</data-set>\n'),
     '<element name="a" type="28"', '<element type="28">: no such type'),
    ("type 0", doc(TEL, '<data-set id="1001">\n<element name="a" type="0"/>\n</data-set>\n'),
     '<element name="a" type="0"', '<element type="0">: no such type'),
    ("nested data set undefined", doc(TEL, '<data-set id="1001">\n<element name="a" type="2005"/>\n</data-set>\n'),
     '<element name="a" type="2005"', 'element "a": data set 2005 (its type) is not defined'),
    ("telegram's data set undefined", doc('<telegram name="t" com-id="7" data-set-id="1009"/>\n', DS),
     '<telegram name="t" com-id="7"', 'telegram "t" (ComId 7): data set 1009 is not defined'),
    ("a data set containing itself",
     doc(TEL, '<data-set id="1001">\n<element name="a" type="UINT8"/>\n<element name="self" type="1001"/>\n</data-set>\n'),
     '<element name="self"', 'element "self": data set 1001 contains itself'),
    ("a circle of two",
     doc(TEL, '<data-set id="1001">\n<element name="b" type="B"/>\n</data-set>\n'
         '<data-set name="B" id="1002">\n<element name="back" type="1001"/>\n</data-set>\n'),
     '<element name="back"', 'element "back": data set 1001 contains itself (through data set 1002)'),
    ("array-size 0 first", doc(TEL, '<data-set id="1001">\n<element name="v" type="UINT8" array-size="0"/>\n</data-set>\n'),
     '<element name="v"', 'element "v": array-size 0 (a variable array) needs a single integer element'),
    ("array-size 0 after a REAL32",
     doc(TEL, '<data-set id="1001">\n<element name="n" type="REAL32"/>\n<element name="v" type="UINT8" array-size="0"/>\n</data-set>\n'),
     '<element name="v"', 'needs a single integer element'),
    ("array-size 0 after an array",
     doc(TEL, '<data-set id="1001">\n<element name="n" type="UINT8" array-size="2"/>\n<element name="v" type="INT8" array-size="0"/>\n</data-set>\n'),
     '<element name="v"', 'needs a single integer element'),
    ("array-size 0 after a UINT64",
     doc(TEL, '<data-set id="1001">\n<element name="n" type="UINT64"/>\n<element name="v" type="INT8" array-size="0"/>\n</data-set>\n'),
     '<element name="v"', 'needs a single integer element'),
    ("duplicate ComId", doc(TEL + '<telegram name="u" com-id="1" data-set-id="1001"/>\n', DS),
     '<telegram name="u"', 'ComId 1 defined again (first at line 4, "t" with data set 1001)'),
    ("the same ComId on another interface with another data set",
     HEAD + TEL + '</bus-interface><bus-interface name="eth1">\n'
     '<telegram name="t" com-id="1" data-set-id="1002"/>\n' + MID + DS +
     '<data-set id="1002">\n<element name="b" type="UINT8"/>\n</data-set>\n' + TAIL,
     '<telegram name="t" com-id="1" data-set-id="1002"', 'ComId 1 defined again'),
    ("duplicate data-set id", doc(TEL, DS + '<data-set id="1001">\n<element type="UINT8"/>\n</data-set>\n'),
     '<data-set id="1001">', 'data set 1001 defined again (first at line 7)'),
    ("data-set id of a type", doc(TEL, '<data-set id="12">\n<element type="UINT8"/>\n</data-set>\n'),
     '<data-set id="12">', 'an id must be above 30'),
    ("a data set without element", doc(TEL, '<data-set id="1001">\n</data-set>\n'),
     '<data-set id="1001">', 'data set 1001 has no element'),
    ("not well-formed", doc(TEL, '<data-set id="1001">\n<element name="a" type="UINT8">\n</data-set>\n'),
     'data-set>\n</data-set-list>', 'mismatched tag'),  # expat points at the tag's name
    ("com-id not a number", doc('<telegram com-id="abc"/>\n', DS), '<telegram com-id="abc"',
     '<telegram com-id="abc">: not a decimal number'),
    ("com-id above 32 bits", doc('<telegram com-id="4294967296"/>\n', DS), '<telegram com-id="4294967296"',
     'above 4294967295'),
    ("no com-id", doc('<telegram name="x"/>\n', DS), '<telegram name="x"', '<telegram> without com-id'),
    ("no data-set id", doc(TEL, '<data-set name="n">\n<element type="UINT8"/>\n</data-set>\n'),
     '<data-set name="n">', '<data-set> without id'),
    ("no element type", doc(TEL, '<data-set id="1001">\n<element name="a"/>\n</data-set>\n'),
     '<element name="a"', '<element> without type'),
    ("scale not a number", doc(TEL, '<data-set id="1001">\n<element name="a" type="UINT8" scale="abc"/>\n</data-set>\n'),
     '<element name="a"', '<element scale="abc">: not a finite number'),
    ("offset nan", doc(TEL, '<data-set id="1001">\n<element name="a" type="UINT8" offset="nan"/>\n</data-set>\n'),
     '<element name="a"', '<element offset="nan">: not a finite number'),
    ("pd cycle not a number", doc('<telegram name="t" com-id="1" data-set-id="1001">\n<pd-parameter cycle="10ms"/>\n</telegram>\n', DS),
     '<pd-parameter', '<pd-parameter cycle="10ms">: not a decimal number'),
    ("nested 17 deep",
     doc(TEL, '<data-set id="1001">\n<element name="d" type="1002"/>\n</data-set>\n' +
         "".join('<data-set id="%d">\n<element name="d" type="%d"/>\n</data-set>\n' % (1002 + i, 1003 + i)
                 for i in range(15)) +
         '<data-set id="1017">\n<element name="z" type="UINT8"/>\n</data-set>\n'),
     '<element name="d" type="1017"', 'data sets nested more than 16 deep'),  # the link too deep
    ("more than 65535 bytes", doc(TEL, '<data-set id="1001">\n<element name="big" type="UINT16" array-size="40000"/>\n</data-set>\n'),
     '<element name="big"', 'telegram "t" (ComId 1), element "big": the data set needs more than 65535 bytes'),
    ("a variable array in a variable array of data sets",
     doc(TEL, '<data-set id="1001">\n<element name="n" type="UINT8"/>\n<element name="outer" type="1002" array-size="0"/>\n</data-set>\n'
         '<data-set id="1002">\n<element name="m" type="UINT8"/>\n<element name="inner" type="UINT8" array-size="0"/>\n</data-set>\n'),
     '<element name="inner"', 'element "inner": a variable array inside a variable array of data sets'),
    ("an empty name", doc(TEL, '<data-set id="1001">\n<element name="" type="UINT8"/>\n</data-set>\n'),
     '<element name=""', '<element name="">: an empty name'),
    ("a control character in a name", doc(TEL, '<data-set id="1001">\n<element name="a&#9;b" type="UINT8"/>\n</data-set>\n'),
     '<element name="a&#9;b"', 'a control character (0x09) in the name'),
    ("empty file", "", None, "no element found"),
    ("billion laughs",
     '<?xml version="1.0"?>\n<!DOCTYPE d [<!ENTITY a "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa">' +
     "".join('<!ENTITY %s "%s">' % (chr(98 + i), ("&%s;" % chr(97 + i)) * 10) for i in range(8)) +
     ']>\n<device><telegram name="&i;" com-id="1"/></device>\n', None, "amplification"),
]


def line_col(text, needle):
    i = text.index(needle)
    line = text.count("\n", 0, i) + 1
    return line, i - (text.rfind("\n", 0, i) + 1) + 1


def load(dump, path):
    # a cross build's tool runs under meson's exe_wrapper (qemu-user)
    wrap = shlex.split(os.environ.get("MESON_EXE_WRAPPER", ""))
    r = subprocess.run(wrap + [dump, path], capture_output=True, text=True, timeout=30)
    return r.returncode, r.stdout


def main():
    dump, srcdir = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        for what, text, needle, msg in BAD:
            path = os.path.join(tmp, "bad.xml")
            with open(path, "w") as f:
                f.write(text)
            rc, out = load(dump, path)
            assert rc == 1 and out.startswith("error -22: " + path + ":"), "%s: %r" % (what, out)
            if needle:
                line, col = line_col(text, needle)
                where = "%s:%d:%d: " % (path, line, col)
                assert out.startswith("error -22: " + where), "%s: want %s in %r" % (what, where, out)
            assert msg in out, "%s: want %r in %r" % (what, msg, out)
        rc, out = load(dump, os.path.join(tmp, "none.xml"))
        assert rc == 1 and out == "error -2: %s: No such file or directory\n" % os.path.join(tmp, "none.xml"), out
    good(dump, srcdir)
    if "--reference" in sys.argv:
        reference(dump, sys.argv[sys.argv.index("--reference") + 1])
    print("%d bad files refused at their line and column; the good ones read as written" % len(BAD))
    return 0


def good(dump, srcdir):
    rc, out = load(dump, os.path.join(srcdir, "all-types.xml"))
    assert rc == 0, out
    lines = out.splitlines()
    # the second AllTypes (eth1) merged; Var#107 and the unnamed elements'
    # repeated names ("n" in data set 1103: n#2...n#10) renamed
    assert lines[0] == "config telegrams 8 datasets 9 merged 1 renamed 10", lines[0]
    tel = {l.split()[1]: l for l in lines if l.startswith("telegram ")}
    assert "AllTypes dataset 1100 pd 1 cycle 100000 timeout 300000 md 0" in tel["100"], tel["100"]
    assert "Arrays dataset 1102 pd 0 cycle 0 timeout 0 md 1 reply 500000 confirm 250000 tcp 1" in tel["102"]
    assert tel["106"].startswith("telegram 106 Ping dataset 0 ") and tel["106"].endswith("min-bytes 0 leaves 0")
    assert tel["105"].startswith("telegram 105 comid105 ")
    assert tel["107"].startswith("telegram 107 Var#107 ")
    leaves = [l.split()[2] for l in lines if l.startswith("leaf 105 ")]
    assert leaves == ["comid105.element1", "comid105.element2[0]", "comid105.element2[1]", "comid105.x"], leaves
    leaves = [l for l in lines if l.startswith("leaf 104 ")]
    names = [l.split()[2] for l in leaves]
    assert names[:7] == ["Nested.count", "Nested.door[].open", "Nested.door[].force", "Nested.door[].pos[0]",
                         "Nested.door[].pos[1]", "Nested.door[].len", "Nested.door[].label"], names
    assert "Nested.right[1].state.since" in names and "Nested.s.code" in names, names
    assert "leaf 104 Nested.door[].force INT16 unit=N scale=0.5 offset=0 max=255" in leaves, leaves
    assert "leaf 100 AllTypes.u16 UINT16 unit=km/h scale=0.10000000000000001 offset=0 max=0" in lines
    # " 010 " is ten, decimal as the reference reads it (not C's octal 8)
    assert "leaf 101 ByNumber.padded UINT32 unit= scale=1 offset=0 max=0" in lines


def reference(dump, ref):
    refused = {"example_example.xml": ":79:9: element \"string\": array-size 0",
               "test_xml_device2.xml": ":69:13: <element type=\"28\">: no such type"}
    n = 0
    for name in sorted(os.listdir(ref)):
        if not name.endswith(".xml"):
            continue
        rc, out = load(dump, os.path.join(ref, name))
        if name in refused:
            assert rc == 1 and refused[name] in out, "%s: %s" % (name, out)
        else:
            assert rc == 0 and out.startswith("config "), "%s: %s" % (name, out)
        print("%s: %s" % (name, out.splitlines()[0]))
        n += 1
    assert n >= 10, "only %d reference files in %s" % (n, ref)


if __name__ == "__main__":
    sys.exit(main())
