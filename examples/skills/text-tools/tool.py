#!/usr/bin/env python3
"""A code skill as a plain script: arguments as JSON on stdin, the result as JSON on stdout.

The working directory is the skill's folder inside a private copy of the workspace; files written
under the workspace root (two levels up) are sent back and saved when the tool's level is write.
"""
import json
import os
import re
import sys


def count(args):
    text = args["text"]
    return {"lines": len(text.splitlines()), "words": len(text.split()), "characters": len(text)}


def save_note(args):
    title = args["title"]
    if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", title):
        return {"success": False, "error": "title must be 1-64 letters, digits, '-' or '_'"}
    workspace = os.path.abspath(os.path.join(os.getcwd(), "..", ".."))
    folder = os.path.join(workspace, "memory", "notes")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, title + ".md"), "w", encoding="utf-8") as out:
        out.write(args["text"].rstrip("\n") + "\n")
    return {"saved": "memory/notes/" + title + ".md"}


TOOLS = {"count": count, "save_note": save_note}

if __name__ == "__main__":
    tool = TOOLS.get(sys.argv[1] if len(sys.argv) > 1 else "")
    if tool is None:
        json.dump({"success": False, "error": "unknown tool"}, sys.stdout)
    else:
        json.dump(tool(json.load(sys.stdin)), sys.stdout)
