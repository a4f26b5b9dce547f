"""Replaying a capture as load against any target, comparing every answer with the one recorded.

``plan`` turns capture records into per-connection schedules, ``engine`` replays connections with a
non-blocking socket loop over the sans-IO codec (no reactor: it runs inside Spark executors), ``translate``
keeps the replay meaningful on a target whose state differs, ``compare`` gives each request its verdict.
"""
