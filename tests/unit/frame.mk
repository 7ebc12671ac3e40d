UNIT_TESTS += frame
unit_frame_SRCS := tests/unit/test_frame.c hv/mm/frame.c
