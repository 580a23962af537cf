"""Placeholder: this page is being built."""

import streamlit as st

st.title("judge_audit")
st.info("This page is not built yet.")
