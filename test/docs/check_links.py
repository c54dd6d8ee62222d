#!/usr/bin/python3
"""Checks the links of the project's documents: every relative link in
README.md and docs/*.md names a file that exists, and every `#anchor` into a
markdown file (or within one) names one of that file's headings, as GitHub
turns headings into anchors. Links inside fenced code blocks and inline code
are not links. Prints each broken link as FILE:LINE: what is wrong, and exits
1 if there is any.

    check_links.py <source dir>
"""
import os
import re
import sys
import urllib.parse

FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
# [text](target) and ![alt](target); the target ends at whitespace (an
# optional "title" may follow) or at the closing parenthesis.
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
EXTERNAL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")  # http:, https:, mailto:, chrome: ...


def prose_lines(path):
    """(line number, text) of the lines outside fenced code blocks."""
    inside = False
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if FENCE.match(line):
                inside = not inside
                continue
            if not inside:
                yield number, line.rstrip("\n")


def slug(heading):
    """GitHub's anchor of a heading: markup removed, lowercase, punctuation
    other than '-' and '_' dropped, each space a '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.replace("`", "").lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


def anchors(path):
    """Every anchor of a markdown file; repeated headings get -1, -2, ... as on GitHub."""
    seen = {}
    result = set()
    for _, line in prose_lines(path):
        match = HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        result.add(base if count == 0 else f"{base}-{count}")
    return result


def check(source_dir):
    documents = [os.path.join(source_dir, "README.md")]
    docs_dir = os.path.join(source_dir, "docs")
    documents += sorted(os.path.join(docs_dir, name) for name in os.listdir(docs_dir)
                        if name.endswith(".md"))
    cache = {}
    errors = []
    checked = 0
    for document in documents:
        where = os.path.relpath(document, source_dir)
        for number, line in prose_lines(document):
            for target in LINK.findall(INLINE_CODE.sub("", line)):
                if not target or EXTERNAL.match(target):
                    continue
                checked += 1
                path_part, _, anchor = target.partition("#")
                path_part = urllib.parse.unquote(path_part)
                resolved = (os.path.normpath(os.path.join(os.path.dirname(document), path_part))
                            if path_part else document)
                if not os.path.exists(resolved):
                    errors.append(f"{where}:{number}: '{target}': no such file "
                                  f"{os.path.relpath(resolved, source_dir)}")
                    continue
                if not anchor:
                    continue
                if not resolved.endswith(".md") or os.path.isdir(resolved):
                    errors.append(f"{where}:{number}: '{target}': an anchor into a file that is "
                                  "not markdown")
                    continue
                if resolved not in cache:
                    cache[resolved] = anchors(resolved)
                if urllib.parse.unquote(anchor) not in cache[resolved]:
                    errors.append(f"{where}:{number}: '{target}': "
                                  f"{os.path.relpath(resolved, source_dir)} has no heading "
                                  f"whose anchor is '#{anchor}'")
    return documents, checked, errors


def main():
    if len(sys.argv) != 2:
        print("usage: check_links.py <source dir>", file=sys.stderr)
        return 2
    documents, checked, errors = check(sys.argv[1])
    for error in errors:
        print(error)
    print(f"check_links: {checked} relative links in {len(documents)} documents, "
          f"{len(errors)} broken")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
